package accel

import (
	"io/fs"
	"testing"
	"testing/fstest"
)

func TestLineEraserEmptiesOnlyTheGivenLines(t *testing.T) {
	root := &lineEraser{
		FS: fstest.MapFS{
			"a.conf": {Data: []byte("SecMarker A\nSecRule ARGS \"@rx x\" \\\n  \"id:1\"\nSecMarker B\n")},
			"b.conf": {Data: []byte("SecMarker A\n")},
		},
		erase: map[string][][2]int{"a.conf": {{1, 1}, {4, 4}}, "missing.conf": {{1, 1}}},
	}
	for _, c := range []struct{ name, want string }{
		// The rule keeps lines 2 and 3; the line count stays.
		{"a.conf", "\nSecRule ARGS \"@rx x\" \\\n  \"id:1\"\n\n"},
		{"b.conf", "SecMarker A\n"},
	} {
		got, err := fs.ReadFile(root, c.name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s: read %q, want %q", c.name, got, c.want)
		}
	}
	if _, err := fs.ReadFile(root, "missing.conf"); err == nil {
		t.Error("a missing file read without error")
	}
}

package accel

import (
	"io/fs"
	"testing"
	"testing/fstest"
)

func TestRuleEditorRewritesOnlyTheGivenLines(t *testing.T) {
	root := &ruleEditor{
		FS: fstest.MapFS{
			"a.conf": {Data: []byte("SecMarker A\nSecRule ARGS \"@rx x\" \\\n  \"id:1\"\nSecMarker B\n")},
			"b.conf": {Data: []byte("SecMarker A\n")},
		},
		edits: map[string][]lineEdit{
			"a.conf":       {{1, 1, ""}, {2, 3, `SecAction "id:1,pass"`}, {4, 4, ""}},
			"missing.conf": {{1, 1, ""}},
		},
	}
	for _, c := range []struct{ name, want string }{
		// The rule's two lines become one and an empty one; the line
		// count stays.
		{"a.conf", "\nSecAction \"id:1,pass\"\n\n\n"},
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

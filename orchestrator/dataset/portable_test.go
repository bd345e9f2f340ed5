package dataset

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReplaceRootsNamesWholePathsOnly(t *testing.T) {
	roots := []PathRoot{
		{"/work/main/results/ref", "<dataset>"},
		{"/work/main", "<repo>"},
		{"/tmp", "<tmp>"},
	}
	tests := []struct{ in, want string }{
		{`"path": "/work/main/results/ref/runs/r0/envoy.log"`, `"path": "<dataset>/runs/r0/envoy.log"`},
		{`filename: /work/main/build/libcorazawaf.so`, `filename: <repo>/build/libcorazawaf.so`},
		{`--log-path=/tmp/x.log /tmp`, `--log-path=<tmp>/x.log <tmp>`},
		{`"/work/main"`, `"<repo>"`},
		{`/tmpfs/x /var/tmp/y /work/mainline`, `/tmpfs/x /var/tmp/y /work/mainline`},
		{`Include /work/main/rulesets/full-crs.conf\n`, `Include <repo>/rulesets/full-crs.conf\n`},
	}
	for _, tc := range tests {
		if got := string(replaceRoots([]byte(tc.in), roots)); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.in, got, tc.want)
		}
		if left := FindMachinePaths([]byte(tc.want), roots); len(left) != 0 {
			t.Errorf("%s: machine paths left: %q", tc.want, left)
		}
	}
	if got := FindMachinePaths([]byte(`a /tmp/x.log, b "/work/main/build/x.so"`), roots); !slices.Equal(got, []string{"/work/main/build/x.so", "/tmp/x.log"}) {
		t.Errorf("found %q", got)
	}
}

func TestMakePortableRewritesTextFilesOnly(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"runs/r0/envoy.json":  `{"module": "` + dir + `/build/libcorazawaf.so"}`,
		"runs/r0/raw.json.gz": dir + "/kept",
		"runs/r0/blob":        "\x00" + dir,
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := MakePortable(filepath.Join(dir, "runs"), []PathRoot{{dir, "<repo>"}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"runs/r0/envoy.json":  `{"module": "<repo>/build/libcorazawaf.so"}`,
		"runs/r0/raw.json.gz": files["runs/r0/raw.json.gz"],
		"runs/r0/blob":        files["runs/r0/blob"],
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != content {
			t.Errorf("%s: %q %v, want %q", name, got, err, content)
		}
	}
}

func TestMachineRootsLongestFirst(t *testing.T) {
	roots := MachineRoots("/work/main/results/ref", "/work/main")
	if roots[0].Placeholder != "<dataset>" || !slices.ContainsFunc(roots, func(r PathRoot) bool { return r.Placeholder == "<tmp>" }) {
		t.Errorf("roots %+v", roots)
	}
	for i := 1; i < len(roots); i++ {
		if len(roots[i].Path) > len(roots[i-1].Path) {
			t.Errorf("roots not longest first: %+v", roots)
		}
	}
}

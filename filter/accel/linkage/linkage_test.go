package linkage

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// sharedObject links an empty shared object against the libraries given
// as sonames, each through a stub library of that soname, with the real
// linker: the DT_NEEDED entries a module build would carry.
func sharedObject(t *testing.T, sonames ...string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler here to link test objects with")
	}
	dir := t.TempDir()
	args := []string{"-shared", "-o", filepath.Join(dir, "module.so"), "-x", "c", os.DevNull, "-L" + dir, "-Wl,--no-as-needed"}
	for i, soname := range sonames {
		stub := filepath.Join(dir, "libstub"+string(rune('a'+i))+".so")
		run(t, cc, "-shared", "-o", stub, "-Wl,-soname,"+soname, "-x", "c", os.DevNull)
		args = append(args, "-lstub"+string(rune('a'+i)))
	}
	run(t, cc, args...)
	return filepath.Join(dir, "module.so")
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func TestOfReadsTheEngineFromTheLibrariesAModuleNeeds(t *testing.T) {
	tests := []struct {
		name    string
		needs   []string
		want    Linkage
		printed string
	}{
		{"versioned libhs", []string{"libstdc++.so.6", "libhs.so.5"}, Linkage{Hyperscan, "libhs.so.5"}, "hyperscan (libhs.so.5)"},
		{"unversioned libhs", []string{"libhs.so"}, Linkage{Hyperscan, "libhs.so"}, "hyperscan (libhs.so)"},
		{"scan-only runtime", []string{"libhs_runtime.so.5"}, Linkage{PureGo, ""}, "pure-go"},
		{"a name that starts like it", []string{"libhsx.so.1"}, Linkage{PureGo, ""}, "pure-go"},
		{"no libraries", nil, Linkage{PureGo, ""}, "pure-go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Of(sharedObject(t, tt.needs...))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || got.String() != tt.printed {
				t.Errorf("Of = %+v (%s), want %+v (%s)", got, got, tt.want, tt.printed)
			}
		})
	}
}

func TestOfRefusesWhatIsNotAnELFFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "module.so")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(t.TempDir(), "missing.so")} {
		if l, err := Of(p); err == nil {
			t.Errorf("Of(%s) = %s, want an error", p, l)
		}
	}
}

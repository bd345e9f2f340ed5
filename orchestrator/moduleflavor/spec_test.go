package moduleflavor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor/moduleflavortest"
)

var buildLibrary = moduleflavortest.BuildLibrary

func writeSpec(t *testing.T, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const goodSpec = `{"library": "libmodule.so", "module_name": "m", "filter_name": "f",
	"config": {"directives": ["Include ${TIER_FILE}"], "mode": "REQUEST_ONLY"}, "env": ["GODEBUG=cgocheck=0"]}`

func TestLoadReadsASpecBesideItsLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := buildLibrary(t, dir, "libmodule.so", moduleflavor.RequiredExports()...)
	s, err := moduleflavor.Load("peer", writeSpec(t, dir, goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	if s.LibraryPath != lib || s.LibraryFile != "libmodule.so" || len(s.LibrarySHA256) != 64 {
		t.Errorf("library %q, file %q, digest %q: want %s by base name and digest", s.LibraryPath, s.LibraryFile, s.LibrarySHA256, lib)
	}
	if s.ModuleName != "m" || s.FilterName != "f" || s.AsStruct() || strings.Join(s.Env, ",") != "GODEBUG=cgocheck=0" {
		t.Errorf("spec %+v", s)
	}
	// The JSON form, part of a sweep's identity, names no path of the
	// machine: the library by its base name and digest.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), dir) || !strings.Contains(string(b), s.LibrarySHA256) {
		t.Errorf("JSON form %s: want the digest and no machine path", b)
	}
	// Another build of the library is another flavor.
	other := buildLibrary(t, dir, "libmodule.so", append(moduleflavor.RequiredExports(), "envoy_dynamic_module_on_http_filter_destroy")...)
	s2, err := moduleflavor.Load("peer", writeSpec(t, dir, goodSpec))
	if err != nil || other != lib || s2.LibrarySHA256 == s.LibrarySHA256 {
		t.Errorf("rebuilt library: digest %s, was %s (%v): want it changed", s2.LibrarySHA256, s.LibrarySHA256, err)
	}
}

func TestLoadRefusesBadSpecs(t *testing.T) {
	dir := t.TempDir()
	buildLibrary(t, dir, "libmodule.so", moduleflavor.RequiredExports()...)
	buildLibrary(t, dir, "libother.so", "envoy_dynamic_module_on_program_init")
	notELF := filepath.Join(dir, "notelf.so")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, name2, spec string
		want              []string
	}{
		{"unknown key", "peer", `{"library": "libmodule.so", "module_name": "m", "filter_name": "f", "config": {}, "mode": "x"}`, []string{`unknown field "mode"`}},
		{"not JSON", "peer", `{library`, []string{"not a spec file"}},
		{"nothing but the library", "peer", `{"library": "libmodule.so"}`, []string{"module_name", "filter_name", "config: give the filter config"}},
		{"no library", "peer", `{"module_name": "m", "filter_name": "f", "config": {}}`, []string{"library: name the module file"}},
		{"missing library", "peer", `{"library": "libnone.so", "module_name": "m", "filter_name": "f", "config": {}}`, []string{"libnone.so: no such file"}},
		{"not a shared library", "peer", `{"library": "notelf.so", "module_name": "m", "filter_name": "f", "config": {}}`, []string{"not a shared library Envoy can load"}},
		{"no HTTP filter hooks", "peer", `{"library": "libother.so", "module_name": "m", "filter_name": "f", "config": {}}`,
			[]string{"does not export [envoy_dynamic_module_on_http_filter_config_new envoy_dynamic_module_on_http_filter_new]"}},
		{"misspelt placeholder", "peer", `{"library": "libmodule.so", "module_name": "m", "filter_name": "f", "config": {"d": ["Include ${TIERFILE}"]}}`,
			[]string{"unknown placeholder ${TIERFILE}"}},
		{"bad tier config", "peer", `{"library": "libmodule.so", "module_name": "m", "filter_name": "f", "config": {}, "tier_configs": {"module-off": {"x": "${NOPE}"}}}`,
			[]string{"tier_configs.module-off: unknown placeholder ${NOPE}"}},
		{"struct config not an object", "peer", `{"library": "libmodule.so", "module_name": "m", "filter_name": "f", "config": ["a"], "config_type": "struct"}`,
			[]string{"config_type struct needs a JSON object"}},
		{"unknown config type", "peer", `{"library": "libmodule.so", "module_name": "m", "filter_name": "f", "config": {}, "config_type": "bytes"}`,
			[]string{`config_type "bytes": use "string" or "struct"`}},
		{"bad env", "peer", `{"library": "libmodule.so", "module_name": "m", "filter_name": "f", "config": {}, "env": ["GODEBUG", "A=1", "A=2"]}`,
			[]string{`env "GODEBUG": write NAME=VALUE`, "env: A set twice"}},
		{"bad name", "Peer_1", goodSpec, []string{`name "Peer_1": use lower-case letters`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := moduleflavor.Load(tt.name2, writeSpec(t, dir, tt.spec))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want %q in it", err, w)
				}
			}
		})
	}
}

func TestFilterConfigFillsThePlaceholders(t *testing.T) {
	s := moduleflavor.Spec{Name: "peer",
		Config:      json.RawMessage(`{"directives": ["Include ${TIER_FILE}", "# ${TIER} of ${RULESETS}"], "n": 3, "nested": {"k": ["${TIER}"]}}`),
		TierConfigs: map[string]json.RawMessage{"module-off": json.RawMessage(`{"mode": "off"}`)},
	}
	tests := []struct {
		name string
		v    moduleflavor.Values
		want string
	}{
		{"a rule-file tier", moduleflavor.Values{Tier: "full-crs", TierFile: "/r/full-crs.conf", Rulesets: "/r"},
			`{"directives":["Include /r/full-crs.conf","# full-crs of /r"],"n":3,"nested":{"k":["full-crs"]}}`},
		// A value is placed inside the string, never into the JSON text:
		// a quote in a path cannot end the string.
		{"a path with a quote", moduleflavor.Values{Tier: "t", TierFile: `/r/a"b.conf`, Rulesets: "/r"},
			`{"directives":["Include /r/a\"b.conf","# t of /r"],"n":3,"nested":{"k":["t"]}}`},
		{"tier_configs wins", moduleflavor.Values{Tier: "module-off", TierFile: "/r/module-off.conf", Rulesets: "/r"}, `{"mode":"off"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.FilterConfig(tt.v)
			if err != nil || got != tt.want {
				t.Errorf("got %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

func TestCheckNeedsTheLibrarysPath(t *testing.T) {
	// A plan read back from a sweep's metadata has the spec without the
	// path: sweeping it again needs the spec file named.
	s := moduleflavor.Spec{Name: "peer", LibraryFile: "libmodule.so", ModuleName: "m", FilterName: "f", Config: json.RawMessage(`{}`)}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "--module-flavor peer=FILE") {
		t.Errorf("Check() = %v, want the flag that names the spec", err)
	}
	s.LibraryPath = "/lib/libmodule.so"
	if err := s.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
}

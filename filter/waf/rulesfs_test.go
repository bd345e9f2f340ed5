package waf

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRulesFSResolutionOrder(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local.conf")
	if err := os.WriteFile(local, []byte("SecRuleEngine On\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rfs := NewRulesFS()
	tests := []struct {
		name, file, wantContains string
	}{
		{"our alias for the recommended config", "@coraza.conf", "Include @coraza.conf-recommended"},
		{"our alias for the CRS setup", "@crs-setup.conf", "Include @crs-setup.conf.example"},
		{"coraza-coreruleset's own name", "@coraza.conf-recommended", "SecRuleEngine DetectionOnly"},
		{"a CRS file", "@owasp_crs/REQUEST-942-APPLICATION-ATTACK-SQLI.conf", "942100"},
		{"a CRS file under a parent directory", "/etc/waf/@owasp_crs/REQUEST-942-APPLICATION-ATTACK-SQLI.conf", "942100"},
		{"the local filesystem", local, "SecRuleEngine On"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := fs.ReadFile(rfs, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.wantContains) {
				t.Fatalf("%s does not contain %q", tt.file, tt.wantContains)
			}
		})
	}
}

func TestRulesFSGlobAndMissing(t *testing.T) {
	rfs := NewRulesFS()
	matches, err := rfs.Glob("@owasp_crs/*.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) < 20 {
		t.Fatalf("CRS glob matched %d files, want the whole rule set", len(matches))
	}
	_, err = rfs.ReadFile("/nonexistent/rules.conf")
	if err == nil || !strings.Contains(err.Error(), "not readable locally") {
		t.Fatalf("missing file error = %v", err)
	}
}

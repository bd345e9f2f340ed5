package bootstrap

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
)

func TestBuildReaddressesAndInlinesRules(t *testing.T) {
	dir := t.TempDir()
	inner := filepath.Join(dir, "inner.conf")
	os.WriteFile(inner, []byte("SecRule REQUEST_URI \"@contains /x\" \\\n    \"id:1,phase:1,deny\"\n"), 0o644)
	tier := filepath.Join(dir, "tier.conf")
	os.WriteFile(tier, []byte("SecRuleEngine On\nInclude "+inner+"\nInclude @owasp_crs/*.conf\n"), 0o644)
	waf, _ := json.Marshal(map[string]any{"directives": []string{"Include " + tier}, "audit_log": "/home/me/results/run/audit.log"})
	opts := Options{ListenHost: "0.0.0.0", ListenPort: 10000, AdminPort: 9901, BackendHost: "10.1.2.3", BackendPort: 8080,
		WAFConfigJSON: string(waf), ModulePath: "/usr/local/lib/wafsweep/libcorazawaf.so", AuditLogDir: "/var/log/corazawaf"}
	b, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	// protojson varies its whitespace on purpose: compare compacted.
	var compact bytes.Buffer
	if err := json.Compact(&compact, b.JSON); err != nil {
		t.Fatal(err)
	}
	text := compact.String()
	for _, want := range []string{`"address":"0.0.0.0"`, `"address":"10.1.2.3"`, `"address":"127.0.0.1"`, "/usr/local/lib/wafsweep/libcorazawaf.so"} {
		if !strings.Contains(text, want) {
			t.Errorf("bootstrap lacks %s", want)
		}
	}
	var cfg struct {
		Directives []string `json:"directives"`
		AuditLog   string   `json:"audit_log"`
	}
	if err := json.Unmarshal([]byte(b.WAFConfigJSON), &cfg); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cfg.Directives, "\n")
	if strings.Contains(got, dir) || !strings.Contains(got, `"id:1,phase:1,deny"`) || !strings.Contains(got, "Include @owasp_crs/*.conf") {
		t.Errorf("directives not inlined as expected:\n%s", got)
	}
	if cfg.AuditLog != "/var/log/corazawaf/audit.log" {
		t.Errorf("audit log %s", cfg.AuditLog)
	}
	// The same inputs give the same hash; another backend another one.
	again, _ := Build(opts)
	opts.BackendHost = "10.1.2.4"
	other, _ := Build(opts)
	if again.Hash != b.Hash || other.Hash == b.Hash {
		t.Errorf("hashes %s %s %s: want stable and content-dependent", b.Hash, again.Hash, other.Hash)
	}
	// TLS: the listener terminates it with the pod's files.
	opts.TLS = &envoyconfig.TLSFiles{CertChain: "/etc/wafsweep/tls/tls.crt", PrivateKey: "/etc/wafsweep/tls/tls.key"}
	overTLS, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"envoy.transport_sockets.tls", opts.TLS.CertChain, opts.TLS.PrivateKey} {
		if !bytes.Contains(overTLS.JSON, []byte(want)) || bytes.Contains(other.JSON, []byte(want)) {
			t.Errorf("%s: want it in the TLS bootstrap alone", want)
		}
	}
}

func TestIncludeCycleIsAnError(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.conf")
	os.WriteFile(loop, []byte("Include "+loop+"\n"), 0o644)
	if _, err := PodWAFConfig(`{"directives":["Include `+loop+`"]}`, ""); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Fatalf("cycle: %v", err)
	}
}

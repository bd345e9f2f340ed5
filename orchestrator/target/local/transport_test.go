package local_test

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
	"github.com/wafsweep/wafsweep/orchestrator/tlscert"
)

// A sweep over HTTP/2 or TLS measures through each proxy with the
// pre-check sent over the same transport (an answer over another protocol
// or a certificate the run did not make fails it, and the step would be
// invalid), records the transport on every row and in the metadata, and
// leaves no private key in the dataset.
func TestSweepsOverEachTransport(t *testing.T) {
	h2, h2tls, h1tls := plan.Transport{Protocol: plan.ProtocolH2}, plan.Transport{Protocol: plan.ProtocolH2, TLS: true}, plan.Transport{Protocol: plan.ProtocolH1, TLS: true}
	for _, tc := range []struct {
		flavor    string
		transport plan.Transport
	}{
		{plan.FlavorWAF, h2},
		{plan.FlavorWAF, h2tls},
		{plan.FlavorWAF, h1tls},
		{plan.FlavorNginxModSecurity, h2},
		{plan.FlavorNginxModSecurity, h2tls},
		{plan.FlavorDirect, h2tls}, // the backend is the edge
	} {
		// No "+" in the name: ModSecurity cuts an Include path there, and
		// the sweep's directory is under the test's.
		t.Run(tc.flavor+"/"+strings.ReplaceAll(tc.transport.Name(), "+", "-"), func(t *testing.T) {
			switch tc.flavor {
			case plan.FlavorWAF:
				requireModule(t)
			case plan.FlavorNginxModSecurity:
				requireNginx(t)
			}
			out := sweepAtLowRate(t, tc.flavor, func(p *plan.Plan) { p.Protocol, p.TLS = tc.transport.Protocol, tc.transport.TLS })
			meta, err := dataset.ReadMetadata(filepath.Join(out, sweep.MetadataFile))
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(meta.Notes, "\n")
			if meta.Plan.Transport() != tc.transport || tc.transport.HTTP2() != strings.Contains(notes, "HTTP/2: the load generator is Fortio's standard client") ||
				tc.transport.TLS != strings.Contains(notes, "TLS: the proxy") {
				t.Errorf("metadata records %+v with notes %q", meta.Plan.Transport(), meta.Notes)
			}
			knees, err := dataset.ReadKnees(filepath.Join(out, sweep.KneesFile))
			if err != nil || len(knees) == 0 || knees[0].Transport != tc.transport {
				t.Errorf("knees %+v (%v): want the transport %+v", knees, err, tc.transport)
			}
			filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Name() == tlscert.KeyFileName {
					t.Errorf("the dataset holds the run's private key: %s", path)
				}
				return err
			})
		})
	}
}

// An attack sent over HTTP/2 with TLS is stopped by each WAF proxy before
// the origin: the backend, which records what reached it, sees the benign
// request (over HTTP/1.1) and never the attack.
func TestAttacksOverHTTP2AndTLSStopBeforeTheBackend(t *testing.T) {
	certs, err := tlscert.Generate(t.TempDir(), tlscert.Loopback(loadgen.DefaultHost))
	if err != nil {
		t.Fatal(err)
	}
	over := target.Deployment{Protocol: plan.ProtocolH2, TLS: &certs}
	for _, flavor := range []string{plan.FlavorWAF, plan.FlavorNginxModSecurity} {
		t.Run(flavor, func(t *testing.T) {
			opts := local.Options{}
			if flavor == plan.FlavorWAF {
				opts.ModulePath = requireModule(t)
			} else {
				requireNginx(t)
			}
			d, _, _ := deployOver(t, opts, plan.Config{Flavor: flavor, Tier: plan.TierFullCRS, Shape: plan.ShapeJSON1K}, over)
			send := func(path, body string) int {
				status, _, _, err := loadgen.Probe(t.Context(), loadgen.Spec{URL: d.URL() + path, Method: "POST",
					ContentType: "application/json", Body: []byte(body), HTTP2: true, CAFile: certs.CA})
				if err != nil {
					t.Fatal(err)
				}
				return status
			}
			if got := send("/api/benign", `{"order":{"id":7,"note":"two boxes"}}`); got != 200 {
				t.Errorf("benign: got %d, want 200", got)
			}
			if got := send("/api/attack", `{"order":{"id":7,"note":"1' union select password from users--"}}`); got != 403 {
				t.Errorf("SQLi in a JSON body: got %d, want 403", got)
			}
			reached, ok := local.BackendRecent(d)
			if !ok {
				t.Fatal("the backend does not run in this process")
			}
			var paths []string
			for _, r := range reached {
				paths = append(paths, r.Proto+" "+r.Path)
			}
			if !slices.Equal(paths, []string{"HTTP/1.1 /api/benign"}) {
				t.Errorf("the backend received %q, want only the benign request", paths)
			}
		})
	}
}

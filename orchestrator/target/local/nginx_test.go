package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/nginxconfig"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/precheck"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// requireNginx skips without nginx and the ModSecurity connector, except
// under `make test` (WAFSWEEP_E2E=required), where their absence fails.
func requireNginx(t *testing.T) {
	t.Helper()
	if _, err := nginxconfig.Find(); err != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatalf("real nginx + ModSecurity needed: %v", err)
		}
		t.Skipf("real nginx + ModSecurity needed: %v", err)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// wafConfig is the filter configuration the sweep gives a WAF flavor.
func wafConfig(t *testing.T, tier, runDir string) string {
	t.Helper()
	cfg := map[string]any{"directives": []string{"Include " + filepath.Join(repoRoot(t), "rulesets", tier+".conf")}}
	if tier == plan.TierFullCRSAudit {
		cfg["audit_log"], cfg["audit_engine"] = filepath.Join(runDir, "audit.log"), "On"
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func deployNginx(t *testing.T, tier, shape string) (target.Deployed, string) {
	t.Helper()
	requireNginx(t)
	d, runDir, _ := deploy(t, local.Options{}, plan.Config{Flavor: plan.FlavorNginxModSecurity, Tier: tier, Shape: shape})
	return d, runDir
}

// deploy starts cfg on a local target made with opts, in a run directory of
// its own, with the tier's rules. It is torn down when the test ends (also
// when it fails), or earlier by stop, for a test that reads what the
// processes left behind.
func deploy(t *testing.T, opts local.Options, cfg plan.Config) (d target.Deployed, runDir string, stop func()) {
	t.Helper()
	return deployOver(t, opts, cfg, target.Deployment{})
}

// deployOver is deploy with the transport (and certificate) of over.
func deployOver(t *testing.T, opts local.Options, cfg plan.Config, over target.Deployment) (d target.Deployed, runDir string, stop func()) {
	t.Helper()
	tgt, err := local.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dep := over
	dep.Config, dep.WAFConfigJSON, dep.RunDir = cfg, wafConfig(t, cfg.Tier, runDir), runDir
	d, err = tgt.Deploy(ctx, dep)
	if err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(func() {
		if err := d.Teardown(); err != nil {
			t.Errorf("Teardown: %v", err)
		}
	})
	t.Cleanup(stop)
	return d, runDir, stop
}

func floodQuery(n int) string {
	args := make([]string, n)
	for i := range args {
		args[i] = fmt.Sprintf("a%d=1", i)
	}
	return strings.Join(args, "&")
}

func probe(t *testing.T, d target.Deployed, method, path, contentType, body string) int {
	t.Helper()
	status, _, _, err := loadgen.Probe(context.Background(), loadgen.Spec{
		URL: d.URL() + path, Method: method, ContentType: contentType, Body: []byte(body),
	})
	if err != nil {
		t.Fatal(err)
	}
	return status
}

func TestNginxModSecurityFullCRSInFrontOfTheBackend(t *testing.T) {
	d, runDir := deployNginx(t, plan.TierFullCRS, plan.ShapeJSON1K)
	json1k, err := plan.ShapeByName(plan.ShapeJSON1K)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path, contentType, body string
		want                                  int
	}{
		{"benign GET", "GET", "/api/orders", "", "", 200},
		{"benign JSON", "POST", "/api/orders", "application/json", `{"order":{"id":7,"note":"two boxes, leave at the door"}}`, 200},
		{"benign json_1k shape", "POST", "/api/orders", json1k.ContentType, string(json1k.Body), 200},
		{"SQLi in a JSON body", "POST", "/api/orders", "application/json", `{"order":{"id":7,"note":"1' union select password from users--"}}`, 403},
		{"SQLi in the query", "GET", "/search?q=1%27%20or%201%3D1--", "", "", 403},
		// The module's argument-flood rule (200004), rewritten for ModSecurity.
		{"1001 query arguments", "GET", "/api/orders?" + floodQuery(1001), "", "", 400},
	}
	for _, tc := range tests {
		if got := probe(t, d, tc.method, tc.path, tc.contentType, tc.body); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
	// The sweep's own pre-check of this configuration passes too.
	checks, err := precheck.Checks(plan.Config{Flavor: plan.FlavorNginxModSecurity, Tier: plan.TierFullCRS, Shape: plan.ShapeJSON1K})
	if err != nil {
		t.Fatal(err)
	}
	if err := precheck.Run(context.Background(), loadgen.Spec{URL: d.URL()}, checks); err != nil {
		t.Error(err)
	}
	log, err := os.ReadFile(filepath.Join(runDir, nginxconfig.ErrorLogFileName))
	if err != nil || !strings.Contains(string(log), `[id "949110"]`) {
		t.Errorf("error log does not show CRS's anomaly-score denial (949110): %v\n%s", err, log)
	}

	// A brief constant-throughput step, accounted like a sweep step.
	before, err := d.Usage()
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := d.RunLoad(context.Background(), []loadgen.Spec{{
		URL: d.URL() + "/api/orders", Method: json1k.Method, ContentType: json1k.ContentType, Body: json1k.Body,
		QPS: 20, Connections: 4, Duration: 3 * time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	after, err := d.Usage()
	if err != nil {
		t.Fatal(err)
	}
	// Completion is the capacity signal, and on a shared 2-core machine
	// other work can steal the proxy's CPU: 20 rps is far below the knee,
	// so only a loose bound is asserted. Errors and reconnects are not
	// excused.
	if res.CompletionRatio() < 0.8 || res.Non2xx != 0 || res.SocketErrors != 0 || res.SocketsOpened > 4 {
		t.Errorf("step: completed %d of %d, non-2xx %d, socket errors %d, sockets %d", res.Completed, res.Scheduled, res.Non2xx, res.SocketErrors, res.SocketsOpened)
	}
	cpu := after.ProxyCPUSeconds - before.ProxyCPUSeconds
	if cpu <= 0 || after.ProxyRSSBytes == 0 || after.ProxyPeakRSSBytes < after.ProxyRSSBytes {
		t.Errorf("usage before %+v after %+v", before, after)
	}
	if d.Restarted() {
		t.Error("nginx reported a restart during a quiet step")
	}
	t.Logf("full-crs json_1k at 20 rps: %.2f ms p99, %.2f ms CPU per request, PSS %.1f MiB, sum of VmHWM %.1f MiB",
		res.P99Ms, 1000*cpu/float64(res.Completed), float64(after.ProxyRSSBytes)/(1<<20), float64(after.ProxyPeakRSSBytes)/(1<<20))
}

// Every tier family passes the sweep's pre-check through ModSecurity: its
// attacks get 403, the benign shapes 200.
func TestNginxModSecurityTiersPassThePrecheck(t *testing.T) {
	for _, tier := range []string{plan.TierHeadersOnly, plan.TierTargeted, plan.TierFullCRSPL2, plan.TierFullCRSAudit} {
		t.Run(tier, func(t *testing.T) {
			d, runDir := deployNginx(t, tier, plan.ShapeJSON10K)
			checks, err := precheck.Checks(plan.Config{Flavor: plan.FlavorNginxModSecurity, Tier: tier, Shape: plan.ShapeJSON10K})
			if err != nil {
				t.Fatal(err)
			}
			if err := precheck.Run(context.Background(), loadgen.Spec{URL: d.URL()}, checks); err != nil {
				t.Fatal(err)
			}
			if tier == plan.TierFullCRSAudit {
				audit, err := os.ReadFile(filepath.Join(runDir, "audit.log"))
				if err != nil || !strings.HasPrefix(string(audit), `{"transaction":`) {
					t.Errorf("audit log is not ModSecurity's JSON: %v\n%.300s", err, audit)
				}
			}
		})
	}
}

// A real sweep through the flavor: deploy, pre-check, idle CPU, steps,
// knees and metadata.
func TestSweepThroughNginxModSecurity(t *testing.T) {
	requireNginx(t)
	out := sweepAtLowRate(t, plan.FlavorNginxModSecurity, nil)
	meta, err := dataset.ReadMetadata(filepath.Join(out, sweep.MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(meta.Notes, "\n"), "libmodsecurity3") {
		t.Errorf("metadata notes do not record the nginx-modsecurity versions: %q", meta.Notes)
	}
}

// With --audit-log every step records what the audit log took, through
// the module (Coraza's log) and through nginx (ModSecurity's): bytes per
// request from the log's growth in the window, and the proxy's writes to
// storage, which hold at least the log's pages.
func TestSweepsRecordTheAuditLog(t *testing.T) {
	for _, flavor := range []string{plan.FlavorWAF, plan.FlavorNginxModSecurity} {
		t.Run(flavor, func(t *testing.T) {
			if flavor == plan.FlavorWAF {
				requireModule(t)
			} else {
				requireNginx(t)
			}
			out := sweepAtLowRate(t, flavor, func(p *plan.Plan) { p.AuditLog = true })
			steps, err := dataset.ReadSteps(filepath.Join(out, sweep.StepsFile))
			if err != nil {
				t.Fatal(err)
			}
			counted, err := procstat.StorageCounted(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range steps {
				t.Logf("%d rps: %.0f audit bytes per request, %.0f bytes/s written to storage", r.TargetRPS, r.AuditBytesPerReq, r.ProxyDiskWriteBytesPerS)
				// A JSON record of a GET with its headers is over a kilobyte.
				if !(r.AuditBytesPerReq > 500) {
					t.Errorf("%d rps: %v audit bytes per request", r.TargetRPS, r.AuditBytesPerReq)
				}
				logged := r.AuditBytesPerReq * float64(r.Completed) / r.WindowS
				if counted && !(r.ProxyDiskWriteBytesPerS >= logged/2) {
					t.Errorf("%d rps: the proxy wrote %v bytes/s to storage, its audit log grew by %.0f", r.TargetRPS, r.ProxyDiskWriteBytesPerS, logged)
				}
			}
			runDir := filepath.Join(out, "runs", "r0", flavor, plan.TierFullCRS, plan.ShapeGet)
			if sample, err := os.ReadFile(filepath.Join(runDir, sweep.AuditSampleFile)); err != nil || !bytes.HasPrefix(sample, []byte(`{"transaction":`)) {
				t.Errorf("the run directory keeps no sample of the JSON audit log: %v\n%.200s", err, sample)
			}
			if _, err := os.Stat(filepath.Join(runDir, "audit.log")); !os.IsNotExist(err) {
				t.Errorf("the whole audit log stayed in the run directory: %v", err)
			}
			knees, err := dataset.ReadKnees(filepath.Join(out, sweep.KneesFile))
			if err != nil || len(knees) == 0 || !(knees[0].AuditBytesPerReqAtKnee > 500) {
				t.Errorf("knees %+v (%v): want the audit bytes per request at the knee", knees, err)
			}
		})
	}
}

// sweepAtLowRate runs a two-step sweep of flavor at full CRS, GET, far
// below its knee, with the plan changed by change (nil: none), checks each
// step measured the proxy, and returns the sweep's directory.
func sweepAtLowRate(t *testing.T, flavor string, change func(*plan.Plan)) string {
	t.Helper()
	p := plan.Default()
	p.Flavors = []string{flavor}
	p.Tiers = []string{plan.TierFullCRS}
	// A shared test machine, and the capacity search is the plumbing
	// checked here: no measurement's checks, no SLO searches.
	p.MaxLoadgenLateness, p.MaxCPUSteal, p.MaxLoadgenDelay = 1, 1, time.Second
	p.SLOs = nil
	p.Shapes = []string{plan.ShapeGet}
	p.Ladder = []int{10, 20} // far below the knee
	p.Connections = 4
	p.Warmup, p.Measure, p.Cooldown = 300*time.Millisecond, 2*time.Second, 0
	p.FloorRPS, p.Confirm = 0, false
	if change != nil {
		change(&p)
	}
	opts := local.Options{}
	if flavor == plan.FlavorWAF {
		opts.ModulePath = requireModule(t)
	}
	tgt, err := local.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tgt.CheckModule(p); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	err = sweep.Run(t.Context(), sweep.Options{Plan: p, Target: tgt, SweepID: "test", OutDir: out,
		RulesetsDir: filepath.Join(repoRoot(t), "rulesets"), CommandLine: []string{"wafsweep", "sweep", "(test)"}})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := dataset.ReadSteps(filepath.Join(out, sweep.StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	// Two steps, or one when other work on the machine made the first fail
	// (the search then stops: no floor), or a bisection between 10 and 20
	// RPS when the second fell short: at 40 calls a window, one call
	// finishing past its edge is 2.5%, over the 1% a step may miss.
	if len(steps) == 0 || len(steps) > 8 {
		t.Fatalf("%d steps, want 1 or 2, or a bisection below 20 RPS: %+v", len(steps), steps)
	}
	want := p.Configs()[0].ID()
	for _, r := range steps {
		// Pass or fail depends on what else runs on the machine; invalid
		// (a failed pre-check, a restart, reconnects) or a blocked benign
		// request would be the flavor's fault.
		t.Logf("%s at %d rps: %s %v", r.ConfigID, r.TargetRPS, r.Verdict, r.Reasons)
		if r.ConfigID != want || r.Transport != p.Transport() || r.Verdict == dataset.VerdictInvalid || r.Non2xx != 0 || r.Completion < 0.8 {
			t.Errorf("%s at %d rps: %s %v (completed %d of %d, non-2xx %d)", r.ConfigID, r.TargetRPS, r.Verdict, r.Reasons, r.Completed, r.Scheduled, r.Non2xx)
		}
		if flavor != plan.FlavorDirect && (!(r.ProxyCPUS > 0) || !(r.ProxyRSSPeakMB > 0) || !(r.ProxyRSSLifetimePeakMB >= r.ProxyRSSPeakMB) || !(r.CoresPer1k > 0)) {
			t.Errorf("%d rps: resources missing: cpu %v s, peak %v MB, lifetime %v MB, cores/1k %v", r.TargetRPS, r.ProxyCPUS, r.ProxyRSSPeakMB, r.ProxyRSSLifetimePeakMB, r.CoresPer1k)
		}
		if !p.AuditLog && !math.IsNaN(r.AuditBytesPerReq) {
			t.Errorf("%d rps: %v audit bytes per request without an audit log", r.TargetRPS, r.AuditBytesPerReq)
		}
	}
	return out
}

// A plan with the flavor fails before anything starts when nginx or the
// connector is missing, naming the fix; plans without it do not care.
func TestCheckModuleNamesTheNginxFix(t *testing.T) {
	missing := nginxconfig.Installation{Binary: "/nonexistent/nginx", Module: "/nonexistent/ngx_http_modsecurity_module.so"}
	tgt, err := local.New(local.Options{Nginx: missing, EnvoyBinary: "/unused/envoy"})
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Default()
	p.Flavors = []string{plan.FlavorDirect, plan.FlavorNginxModSecurity}
	err = tgt.CheckModule(p)
	if err == nil {
		t.Fatal("CheckModule accepted a plan with nginx-modsecurity and no nginx")
	}
	for _, want := range []string{"flavor nginx-modsecurity", "/nonexistent/nginx", "make nginx-peer", "apt-get install nginx libnginx-mod-http-modsecurity"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	p.Flavors = []string{plan.FlavorDirect}
	if err := tgt.CheckModule(p); err != nil {
		t.Errorf("a plan without nginx-modsecurity: %v", err)
	}
	_, err = tgt.Deploy(context.Background(), target.Deployment{
		Config:        plan.Config{Flavor: plan.FlavorNginxModSecurity, Tier: plan.TierFullCRS, Shape: plan.ShapeGet},
		WAFConfigJSON: `{"directives":[]}`, RunDir: t.TempDir(),
	})
	if err == nil || !strings.Contains(err.Error(), "make nginx-peer") {
		t.Errorf("Deploy err = %v, want the fix named", err)
	}
}

// Without Envoy the target still serves flavors that do not run it; a plan
// with an Envoy flavor is refused up front.
func TestEnvoyIsNeededOnlyByEnvoyFlavors(t *testing.T) {
	t.Setenv(envoyproc.EnvVar, "/nonexistent/envoy")
	tgt, err := local.New(local.Options{})
	if err != nil {
		t.Fatalf("New without Envoy: %v", err)
	}
	p := plan.Default()
	p.Flavors = []string{plan.FlavorDirect}
	if err := tgt.CheckModule(p); err != nil {
		t.Errorf("direct only: %v", err)
	}
	p.Flavors = []string{plan.FlavorEnvoy, plan.FlavorWAF}
	if err := tgt.CheckModule(p); err == nil || !strings.Contains(err.Error(), "flavor envoy") || !strings.Contains(err.Error(), "ENVOY_BIN") {
		t.Errorf("envoy without Envoy: err = %v", err)
	}
}

package e2e

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
)

// The test build of the module panics in the step named by a request header.
// Every body's phase 2 runs off the worker, so off_worker is a step too.
func panicConfig(t *testing.T, failureMode string) string {
	return `{"failure_mode":"` + failureMode + `","failure_status":503,"test_hooks":{"panic_header":"x-corazawaf-panic"},` +
		`"off_worker":{"min_body_bytes":1},"directives":[` +
		tierDirectives(t, "targeted") + "," + responseDirectives + "]}"
}

func TestPanicInEveryHookIsContained(t *testing.T) {
	module := modulePath(t, "CORAZAWAF_TEST_MODULE", "test/libcorazawaf.so")
	closed := startProxy(t, proxyOptions{config: panicConfig(t, "closed"), module: module})
	open := startProxy(t, proxyOptions{config: panicConfig(t, "open"), module: module})
	bodyRequest := request{path: "/page?reply_ct=text/plain&reply_body=hello", body: `{"a":1}`, contentType: "application/json"}
	tests := []struct {
		step           string
		wantClosed     int // status under failure_mode closed
		wantOpen       int // status under failure_mode open
		reachesBackend bool
	}{
		{"request_headers", 503, 200, false},
		{"request_body", 503, 200, false},
		{"off_worker", 503, 200, false},
		{"response_headers", 503, 200, true},
		{"response_body", 503, 200, true},
		// The response is on its way when the stream completes: only the
		// log shows the panic.
		{"stream_complete", 200, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			for _, c := range []struct {
				p    *proxy
				want int
				mode string
			}{{closed, tt.wantClosed, "closed"}, {open, tt.wantOpen, "open"}} {
				r := bodyRequest
				r.headers = map[string]string{"x-corazawaf-panic": tt.step}
				before := c.p.backend.Stats().Requests
				resp := c.p.do(t, r)
				if resp.status != c.want {
					t.Fatalf("failure_mode %s: status %d, want %d\n%s", c.mode, resp.status, c.want, c.p.logTail())
				}
				reached := c.p.backend.Stats().Requests - before
				if c.mode == "closed" && !tt.reachesBackend && reached != 0 {
					t.Fatalf("failure_mode closed let a request reach the backend after a panic in %s", tt.step)
				}
				marker := fmt.Sprintf("panic in %s hook", tt.step)
				eventually(t, "the panic logged", func() bool { return strings.Contains(c.p.log(t), marker) })
				if n := strings.Count(c.p.log(t), marker); n != 1 {
					t.Fatalf("failure_mode %s: the panic in %s was logged %d times, want once", c.mode, tt.step, n)
				}
				// Envoy keeps serving normal streams.
				if resp := c.p.do(t, bodyRequest); resp.status != 200 || c.p.envoy.Exited() {
					t.Fatalf("failure_mode %s: after the panic a normal request got %d (exited %v)", c.mode, resp.status, c.p.envoy.Exited())
				}
			}
		})
	}
	if s := closed.stats(t); s["corazawaf.errors.kind.panic"] < 5 {
		t.Errorf("panics not counted: %s", filterStats(s))
	}
}

// Envoy 1.40 loads modules with RTLD_NOW: every callback the module
// references must be exported by the Envoy binary, or loading fails.
func TestModuleCallbacksAreExportedByEnvoy(t *testing.T) {
	envoy, err := envoyproc.FindBinary()
	if err != nil {
		requireOrSkip(t, "no Envoy binary: %v", err)
	}
	for _, module := range []string{
		modulePath(t, "CORAZAWAF_MODULE", "libcorazawaf.so"),
		modulePath(t, "CORAZAWAF_TEST_MODULE", "test/libcorazawaf.so"),
	} {
		needed := dynamicSymbols(t, module, "--undefined-only")
		exported := map[string]bool{}
		for _, s := range dynamicSymbols(t, envoy, "--defined-only") {
			exported[s] = true
		}
		callbacks := 0
		for _, s := range needed {
			if !strings.HasPrefix(s, "envoy_dynamic_module_callback_") {
				continue
			}
			callbacks++
			if !exported[s] {
				t.Errorf("%s needs %s, which %s does not export", module, s, envoy)
			}
		}
		if callbacks < 10 {
			t.Errorf("%s references only %d callbacks: is this the module?", module, callbacks)
		}
		hooks := dynamicSymbols(t, module, "--defined-only")
		if !contains(hooks, "envoy_dynamic_module_on_program_init") || !contains(hooks, "envoy_dynamic_module_on_http_filter_stream_complete") {
			t.Errorf("%s does not export the event hooks", module)
		}
	}
}

// The no-op module (the module-cost benchmark's measure of what Envoy's
// module machinery costs) must have exactly corazawaf's hooks: Envoy then
// wires both the same way, and only the work behind the hooks differs.
func TestNoopModuleExportsCorazawafsHooks(t *testing.T) {
	hooks := func(module string) []string {
		var out []string
		for _, s := range dynamicSymbols(t, module, "--defined-only") {
			if strings.HasPrefix(s, "envoy_dynamic_module_on_") {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}
	corazawaf := hooks(modulePath(t, "CORAZAWAF_MODULE", "libcorazawaf.so"))
	noop := hooks(modulePath(t, "NOOP_MODULE", "libnoopmodule.so"))
	if len(corazawaf) < 20 || !slices.Equal(noop, corazawaf) {
		t.Errorf("hooks differ:\ncorazawaf: %v\nno-op:     %v", corazawaf, noop)
	}
}

func dynamicSymbols(t *testing.T, file, which string) []string {
	t.Helper()
	out, err := exec.Command("nm", "-D", which, file).Output()
	if err != nil {
		t.Fatalf("nm -D %s %s: %v (install binutils)", which, file, err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[len(f)-1])
		}
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Envoy holds only integer handles, so it needs no GODEBUG=cgocheck=0.
func TestEnvoyRunsWithDefaultCgocheck(t *testing.T) {
	if strings.Contains(os.Getenv("GODEBUG"), "cgocheck=0") {
		t.Fatal("the test environment disables cgocheck; the tests would not prove anything")
	}
	p := startProxy(t, proxyOptions{config: `{"directives":[` + tierDirectives(t, "full-crs") + `]}`})
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.envoy.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(environ), "cgocheck=0") {
		t.Fatal("Envoy was started with cgocheck disabled")
	}
	for _, r := range []request{{path: "/"}, {path: "/api", body: `{"a":[1,2]}`, contentType: "application/json"}, {path: "/search?q=%3Cscript%3E"}} {
		p.do(t, r)
	}
	if p.envoy.Exited() || strings.Contains(p.log(t), "cgo argument has Go pointer") {
		t.Fatalf("cgocheck tripped:\n%s", p.logTail())
	}
}

// `make test` runs this package a second time against a module built with
// GOEXPERIMENT=cgocheck2, which faults on any Go pointer written to C
// memory, and says so with CORAZAWAF_MODULE_GOEXPERIMENT: the module must
// then really be that build, or the run would prove nothing.
func TestModuleIsTheBuildAskedFor(t *testing.T) {
	want := os.Getenv("CORAZAWAF_MODULE_GOEXPERIMENT")
	path := modulePath(t, "CORAZAWAF_MODULE", "libcorazawaf.so")
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the build settings of %s: %v", path, err)
	}
	got := ""
	for _, s := range info.Settings {
		if s.Key == "GOEXPERIMENT" {
			got = s.Value
		}
	}
	t.Logf("%s: %s, GOEXPERIMENT=%q", path, info.GoVersion, got)
	if want != "" && !slices.Contains(strings.Split(got, ","), want) {
		t.Fatalf("%s was built with GOEXPERIMENT=%q; the run asked for %q", path, got, want)
	}
}

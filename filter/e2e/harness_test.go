package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
)

// requireOrSkip fails under `make test` (WAFSWEEP_E2E=required) and skips
// with the reason under a plain `go test`.
func requireOrSkip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("WAFSWEEP_E2E") == "required" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (run `make test` to build it)", args...)
}

// modulePath finds the module: $<envVar>, else build/<rel> in the repo.
func modulePath(t testing.TB, envVar, rel string) string {
	t.Helper()
	path := os.Getenv(envVar)
	if path == "" {
		root, err := envoyproc.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(root, "build", rel)
	}
	if _, err := os.Stat(path); err != nil {
		requireOrSkip(t, "no corazawaf module at %s: %v", path, err)
	}
	return path
}

// proxy is a running Envoy with corazawaf in front of a backend.
type proxy struct {
	backend *backend.Server
	envoy   *envoyproc.Process
	port    int
	logPath string
	accLog  string
}

type proxyOptions struct {
	config string // filter_config JSON
	routes []envoyconfig.Route
	module string // path; default the release module
	// moduleName and filterName are a module flavor's names (see
	// flavorProxyOptions); empty: corazawaf's.
	moduleName, filterName string
	logLevel               string
	asStruct               bool // pass config as a google.protobuf.Struct
	workers                int  // Envoy's --concurrency; default 2
	env                    []string
	upgrades               []string // the HCM's upgrade_configs (e.g. "websocket")
	// upstreamPort sends Envoy's traffic to a server of the test's own on
	// 127.0.0.1 (one that records or answers what the standard backend
	// cannot); 0 uses the backend started with the proxy.
	upstreamPort int
}

// startProxy starts backend and Envoy; both are stopped when the test ends.
func startProxy(t testing.TB, o proxyOptions) *proxy {
	t.Helper()
	p, err := tryStartProxy(t, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func tryStartProxy(t testing.TB, o proxyOptions) (*proxy, error) {
	t.Helper()
	if _, err := envoyproc.FindBinary(); err != nil {
		requireOrSkip(t, "no Envoy binary: %v", err)
	}
	if o.module == "" {
		o.module = modulePath(t, "CORAZAWAF_MODULE", "libcorazawaf.so")
	}
	if o.logLevel == "" {
		o.logLevel = "info"
	}
	if o.workers == 0 {
		o.workers = 2
	}
	be, err := backend.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { be.Close() })
	ports, err := envoyproc.FreePorts(2)
	if err != nil {
		return nil, err
	}
	upstreamPort := be.Port()
	if o.upstreamPort != 0 {
		upstreamPort = o.upstreamPort
	}
	dir := t.TempDir()
	p := &proxy{backend: be, port: ports[0], logPath: filepath.Join(dir, "envoy.log"), accLog: filepath.Join(dir, "access.log")}
	bootstrap, err := envoyconfig.Build(envoyconfig.Options{
		AdminPort: ports[1], ListenPort: ports[0], UpstreamPort: upstreamPort, Routes: o.routes,
		WAF: &envoyconfig.WAFFilter{ModulePath: o.module, ModuleName: o.moduleName, FilterName: o.filterName,
			ConfigJSON: o.config, ConfigAsStruct: o.asStruct},
		AccessLogPath: p.accLog, UpgradeTypes: o.upgrades,
	})
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "envoy.json")
	if err := envoyconfig.WriteFile(cfgPath, bootstrap); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p.envoy, err = envoyproc.Start(ctx, envoyproc.Options{
		ConfigPath: cfgPath, LogPath: p.logPath, AdminPort: ports[1], Concurrency: o.workers, LogLevel: o.logLevel, Env: o.env,
		// Envoy flushes access logs every 10 s by default; tests read them sooner.
		FileFlushInterval: 100 * time.Millisecond,
	})
	if err != nil {
		return p, err
	}
	t.Cleanup(func() {
		if err := p.envoy.Stop(); err != nil {
			t.Errorf("stopping envoy: %v; its log ends:\n%s", err, p.logTail())
		}
	})
	return p, nil
}

type request struct {
	method, path, body, contentType string
	headers                         map[string]string
	http2                           bool
}

type response struct {
	status  int
	body    string
	headers http.Header
}

func (p *proxy) do(t testing.TB, r request) response {
	t.Helper()
	resp, err := p.send(r)
	if err != nil {
		t.Fatalf("%s %s: %v\nenvoy log:\n%s", r.method, r.path, err, p.logTail())
	}
	return resp
}

// send is do without a test: for goroutines, and requests that may fail.
func (p *proxy) send(r request) (response, error) {
	if r.method == "" {
		r.method = "GET"
		if r.body != "" {
			r.method = "POST"
		}
	}
	req, err := http.NewRequest(r.method, fmt.Sprintf("http://127.0.0.1:%d%s", p.port, r.path), strings.NewReader(r.body))
	if err != nil {
		return response{}, err
	}
	req.Host = "shop.wafsweep.test" // a name, never a numeric Host (CRS 920350)
	req.Header.Set("User-Agent", "wafsweep-e2e/1.0")
	req.Header.Set("Accept", "*/*")
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	resp, err := p.client(r.http2).Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: resp.StatusCode, body: string(b), headers: resp.Header}, nil
}

func (p *proxy) client(h2 bool) *http.Client {
	if !h2 {
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

func (p *proxy) logTail() string {
	tail, err := p.envoy.LogTail(40)
	if err != nil {
		return err.Error()
	}
	return tail
}

// log returns Envoy's whole log.
func (p *proxy) log(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logLines returns, for every line of Envoy's log that holds marker, the
// line from marker on.
func (p *proxy) logLines(t testing.TB, marker string) []string {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(p.log(t), "\n") {
		if i := strings.Index(line, marker); i >= 0 {
			lines = append(lines, strings.TrimSpace(line[i:]))
		}
	}
	return lines
}

var ruleIDPattern = regexp.MustCompile(`\[id "(\d+)"\]`)

// loggedRuleIDs lists the rule ids of ModSecurity-style lines in the log.
func (p *proxy) loggedRuleIDs(t testing.TB) map[string]bool {
	ids := map[string]bool{}
	for _, m := range ruleIDPattern.FindAllStringSubmatch(p.log(t), -1) {
		ids[m[1]] = true
	}
	return ids
}

// eventually polls cond, for what Envoy writes asynchronously (logs, stats).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// responseDirectives inspect text/plain response bodies with a rule that
// reads them (the filter leaves the response phases out when no rule does):
// a body holding "secret-token" is answered 502 by rule 5001.
const responseDirectives = `"SecResponseBodyAccess On","SecResponseBodyMimeType text/plain",` +
	`"SecRule RESPONSE_BODY \"@contains secret-token\" \"id:5001,phase:4,deny,status:502,log\""`

func tierDirectives(t testing.TB, tier string) string {
	t.Helper()
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`"Include %s"`, filepath.Join(root, "rulesets", tier+".conf"))
}

package envoyconfig

import (
	"slices"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	filelogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	dmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_modules/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const testModule = "/opt/waf/libcorazawaf.so"

func baseOptions() Options {
	return Options{AdminPort: 9901, ListenPort: 10000, UpstreamPort: 8080}
}

func wafOptions() Options {
	o := baseOptions()
	o.WAF = &WAFFilter{ModulePath: testModule, ConfigJSON: `{"directives":"SecRuleEngine On"}`}
	return o
}

func mustBuild(t *testing.T, o Options) *bootstrapv3.Bootstrap {
	t.Helper()
	b, err := Build(o)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func hcmOf(t *testing.T, b *bootstrapv3.Bootstrap) *hcmv3.HttpConnectionManager {
	t.Helper()
	listeners := b.GetStaticResources().GetListeners()
	if len(listeners) != 1 {
		t.Fatalf("%d listeners, want 1", len(listeners))
	}
	hcm := &hcmv3.HttpConnectionManager{}
	if err := listeners[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatalf("listener filter is not an HCM: %v", err)
	}
	return hcm
}

func setHCM(t *testing.T, b *bootstrapv3.Bootstrap, hcm *hcmv3.HttpConnectionManager) {
	t.Helper()
	typed, err := toAny(hcm)
	if err != nil {
		t.Fatal(err)
	}
	filter := b.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0]
	filter.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: typed}
}

func filterNames(hcm *hcmv3.HttpConnectionManager) []string {
	var names []string
	for _, f := range hcm.GetHttpFilters() {
		names = append(names, f.GetName())
	}
	return names
}

func TestVanillaAndWAFDifferOnlyByTheFilter(t *testing.T) {
	for _, accessLog := range []string{"", "/tmp/access.log"} {
		vanillaOpts, wafOpts := baseOptions(), wafOptions()
		vanillaOpts.AccessLogPath, wafOpts.AccessLogPath = accessLog, accessLog
		vanilla, waf := mustBuild(t, vanillaOpts), mustBuild(t, wafOpts)

		if got := strings.Join(filterNames(hcmOf(t, vanilla)), ","); got != RouterFilterName {
			t.Fatalf("vanilla filters %s, want only the router", got)
		}
		hcm := hcmOf(t, waf)
		if got, want := strings.Join(filterNames(hcm), ","), HTTPFilterName+","+RouterFilterName; got != want {
			t.Fatalf("WAF filters %s, want %s", got, want)
		}
		hcm.HttpFilters = hcm.HttpFilters[1:]
		setHCM(t, waf, hcm)
		if !proto.Equal(vanilla, waf) {
			t.Errorf("access log %q: WAF bootstrap minus its filter differs from vanilla:\n%v\n%v", accessLog, vanilla, waf)
		}
	}
}

func TestWAFFilterContents(t *testing.T) {
	hcm := hcmOf(t, mustBuild(t, wafOptions()))
	filter := &dmfilterv3.DynamicModuleFilter{}
	if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(filter); err != nil {
		t.Fatalf("first filter is not a DynamicModuleFilter: %v", err)
	}
	module := filter.GetDynamicModuleConfig()
	checks := []struct {
		name      string
		got, want any
	}{
		{"module name", module.GetName(), ModuleName},
		{"module file", module.GetModule().GetLocal().GetFilename(), testModule},
		{"do_not_close", module.GetDoNotClose(), true},
		{"metrics namespace", module.GetMetricsNamespace(), DefaultMetricsNamespace},
		{"filter name", filter.GetFilterName(), DefaultFilterName},
		{"config", stringValue(t, filter.GetFilterConfig()), `{"directives":"SecRuleEngine On"}`},
		{"codec", hcm.GetCodecType(), hcmv3.HttpConnectionManager_AUTO},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func stringValue(t *testing.T, a *anypb.Any) string {
	t.Helper()
	s := &wrapperspb.StringValue{}
	if err := a.UnmarshalTo(s); err != nil {
		t.Fatalf("config is not a StringValue: %v", err)
	}
	return s.GetValue()
}

func TestWAFOverridesAreKept(t *testing.T) {
	o := wafOptions()
	o.WAF.FilterName, o.WAF.MetricsNamespace = "crs", "waf_ns"
	filter := &dmfilterv3.DynamicModuleFilter{}
	if err := hcmOf(t, mustBuild(t, o)).GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(filter); err != nil {
		t.Fatal(err)
	}
	if filter.GetFilterName() != "crs" || filter.GetDynamicModuleConfig().GetMetricsNamespace() != "waf_ns" {
		t.Errorf("overrides lost: filter %q namespace %q", filter.GetFilterName(), filter.GetDynamicModuleConfig().GetMetricsNamespace())
	}
	if o.WAF.FilterName != "crs" || len(o.Routes) != 0 {
		t.Error("Build modified the caller's options")
	}
}

func routesOf(t *testing.T, b *bootstrapv3.Bootstrap) []*routev3.Route {
	t.Helper()
	return hcmOf(t, b).GetRouteConfig().GetVirtualHosts()[0].GetRoutes()
}

func TestDefaultRouteSendsEverythingToBackend(t *testing.T) {
	routes := routesOf(t, mustBuild(t, baseOptions()))
	if len(routes) != 1 || routes[0].GetMatch().GetPrefix() != "/" || routes[0].GetRoute().GetCluster() != BackendClusterName {
		t.Fatalf("routes = %v, want one / route to %s", routes, BackendClusterName)
	}
}

func TestPerRouteWAFConfig(t *testing.T) {
	off := `{"directives":"SecRuleEngine Off"}`
	o := wafOptions()
	o.Routes = []Route{{Prefix: "/static", PerRouteWAF: &off}, {Prefix: "/"}}
	routes := routesOf(t, mustBuild(t, o))
	if len(routes) != 2 {
		t.Fatalf("%d routes, want 2", len(routes))
	}
	perRoute := routes[0].GetTypedPerFilterConfig()
	if len(perRoute) != 1 || perRoute[HTTPFilterName] == nil {
		t.Fatalf("route /static typed_per_filter_config keys %v, want only %q", perRoute, HTTPFilterName)
	}
	cfg := &dmfilterv3.DynamicModuleFilterPerRoute{}
	if err := perRoute[HTTPFilterName].UnmarshalTo(cfg); err != nil {
		t.Fatalf("per-route config is not DynamicModuleFilterPerRoute: %v", err)
	}
	if got := stringValue(t, cfg.GetFilterConfig()); got != off {
		t.Errorf("per-route config %q, want %q", got, off)
	}
	if cfg.GetFilterName() != DefaultFilterName || cfg.GetDynamicModuleConfig().GetModule().GetLocal().GetFilename() != testModule {
		t.Errorf("per-route config names filter %q module %v", cfg.GetFilterName(), cfg.GetDynamicModuleConfig().GetModule())
	}
	if n := len(routes[1].GetTypedPerFilterConfig()); n != 0 {
		t.Errorf("route / has %d per-filter configs, want 0", n)
	}
}

func TestOptionalSettingsAreApplied(t *testing.T) {
	o := baseOptions()
	o.StreamIdleTimeout, o.RouteTimeout, o.AccessLogPath = 7*time.Second, 3*time.Second, "/var/log/a.log"
	b := mustBuild(t, o)
	hcm := hcmOf(t, b)
	if got := hcm.GetStreamIdleTimeout().AsDuration(); got != 7*time.Second {
		t.Errorf("stream idle timeout %v", got)
	}
	if got := routesOf(t, b)[0].GetRoute().GetTimeout().AsDuration(); got != 3*time.Second {
		t.Errorf("route timeout %v", got)
	}
	if len(hcm.GetAccessLog()) != 1 {
		t.Fatalf("%d access logs, want 1", len(hcm.GetAccessLog()))
	}
	fileLog := &filelogv3.FileAccessLog{}
	if err := hcm.GetAccessLog()[0].GetTypedConfig().UnmarshalTo(fileLog); err != nil {
		t.Fatal(err)
	}
	format := fileLog.GetLogFormat().GetJsonFormat().GetFields()
	if fileLog.GetPath() != o.AccessLogPath || format["waf"].GetStringValue() != "%DYNAMIC_METADATA(corazawaf)%" ||
		format["response_code_details"].GetStringValue() != "%RESPONSE_CODE_DETAILS%" {
		t.Errorf("access log %v", fileLog)
	}
	if len(hcmOf(t, mustBuild(t, baseOptions())).GetAccessLog()) != 0 {
		t.Error("access log present without AccessLogPath")
	}
}

// A TLS listener offers h2 and http/1.1 by ALPN and reads the files it
// was given; a clear one has no transport socket.
func TestTLSListener(t *testing.T) {
	o := baseOptions()
	o.TLS = &TLSFiles{CertChain: "/run/server.pem", PrivateKey: "/run/server-key.pem"}
	chain := mustBuild(t, o).GetStaticResources().GetListeners()[0].GetFilterChains()[0]
	ctx := &tlsv3.DownstreamTlsContext{}
	if err := chain.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatal(err)
	}
	common := ctx.GetCommonTlsContext()
	cert := common.GetTlsCertificates()[0]
	if !slices.Equal(common.GetAlpnProtocols(), []string{"h2", "http/1.1"}) ||
		cert.GetCertificateChain().GetFilename() != o.TLS.CertChain || cert.GetPrivateKey().GetFilename() != o.TLS.PrivateKey {
		t.Errorf("TLS context %v", ctx)
	}
	if clear := mustBuild(t, baseOptions()).GetStaticResources().GetListeners()[0].GetFilterChains()[0]; clear.GetTransportSocket() != nil {
		t.Errorf("a clear listener has transport socket %v", clear.GetTransportSocket())
	}
}

func TestInvalidOptions(t *testing.T) {
	bad := "{not json"
	ok := "{}"
	tests := []struct {
		name    string
		modify  func(*Options)
		wantErr string
	}{
		{"admin port 0", func(o *Options) { o.AdminPort = 0 }, "AdminPort 0 out of range"},
		{"listen port too big", func(o *Options) { o.ListenPort = 70000 }, "ListenPort 70000 out of range"},
		{"upstream port negative", func(o *Options) { o.UpstreamPort = -1 }, "UpstreamPort -1 out of range"},
		{"same ports", func(o *Options) { o.ListenPort = o.UpstreamPort }, "must all differ"},
		{"empty module path", func(o *Options) { o.WAF = &WAFFilter{} }, "WAF.ModulePath is empty"},
		{"relative module path", func(o *Options) { o.WAF = &WAFFilter{ModulePath: "lib.so"} }, "must be absolute"},
		{"bad WAF JSON", func(o *Options) { o.WAF = &WAFFilter{ModulePath: testModule, ConfigJSON: bad} }, "WAF.ConfigJSON is not valid JSON"},
		{"per-route without WAF", func(o *Options) { o.Routes = []Route{{Prefix: "/", PerRouteWAF: &ok}} }, "Options.WAF is nil"},
		{"bad per-route JSON", func(o *Options) {
			o.WAF = &WAFFilter{ModulePath: testModule}
			o.Routes = []Route{{Prefix: "/", PerRouteWAF: &bad}}
		}, "PerRouteWAF is not valid JSON"},
		{"prefix without slash", func(o *Options) { o.Routes = []Route{{Prefix: "api"}} }, "must start with /"},
		{"shadowed route", func(o *Options) { o.Routes = []Route{{Prefix: "/"}, {Prefix: "/api"}} }, "shadowed by route 0"},
		{"negative timeout", func(o *Options) { o.RouteTimeout = -time.Second }, "must not be negative"},
		{"relative TLS files", func(o *Options) { o.TLS = &TLSFiles{CertChain: "server.pem", PrivateKey: "/k.pem"} }, "must both be absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := baseOptions()
			tt.modify(&o)
			_, err := Build(o)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestInvalidOptionsAreAllReported(t *testing.T) {
	_, err := Build(Options{WAF: &WAFFilter{}})
	for _, want := range []string{"AdminPort", "ListenPort", "UpstreamPort", "ModulePath"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %s", err, want)
		}
	}
}

func TestHash(t *testing.T) {
	hash := func(o Options) string {
		h, err := Hash(mustBuild(t, o))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	withLog := wafOptions()
	withLog.AccessLogPath = "/tmp/a.log" // a Struct: map order would show here
	first := hash(withLog)
	for range 20 {
		if h := hash(withLog); h != first {
			t.Fatalf("hash changed between identical builds: %s vs %s", first, h)
		}
	}
	otherPort := withLog
	otherPort.ListenPort++
	if len(first) != 64 || hash(baseOptions()) == hash(wafOptions()) || hash(otherPort) == first {
		t.Error("hash does not distinguish different bootstraps")
	}
}

func TestMarshalJSONRoundTrips(t *testing.T) {
	o := wafOptions()
	o.AccessLogPath = "/tmp/a.log"
	b := mustBuild(t, o)
	out, err := MarshalJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	back := &bootstrapv3.Bootstrap{}
	if err := protojson.Unmarshal(out, back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(b, back) {
		t.Error("JSON did not round-trip")
	}
	if !strings.Contains(string(out), `"static_resources"`) {
		t.Error("JSON does not use proto field names")
	}
}

// Package envoyconfig builds the Envoy bootstraps a sweep runs: one listener in
// front of one backend, with or without the Coraza dynamic-module filter. The
// vanilla and WAF bootstraps are built by the same code so that they differ
// only by the WAF filter, which is what makes their measurements comparable.
package envoyconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Names used in the generated bootstrap. They are exported because tests and
// stats readers need them (e.g. "cluster.backend.upstream_rq_total").
const (
	// HTTPFilterName is the HCM filter name of the WAF; per-route configs are
	// keyed by it in typed_per_filter_config.
	HTTPFilterName = "corazawaf"
	// ModuleName is the dynamic module's name (libcorazawaf.so).
	ModuleName = "corazawaf"
	// DefaultFilterName is the filter_name handed to the module's config hook.
	DefaultFilterName = "corazawaf"
	// DefaultMetricsNamespace prefixes the module's own metrics.
	DefaultMetricsNamespace = "corazawaf"
	// DynamicMetadataNamespace is where the module publishes its verdicts;
	// the access log prints it.
	DynamicMetadataNamespace = "corazawaf"
	// BackendClusterName is the single upstream cluster.
	BackendClusterName = "backend"
	// ListenerName names the only listener.
	ListenerName = "ingress"
	// HTTPStatPrefix is the HCM stat prefix ("http.ingress_http.*").
	HTTPStatPrefix = "ingress_http"
	// RouterFilterName is Envoy's terminal router filter.
	RouterFilterName = "envoy.filters.http.router"
)

// Options describes one bootstrap. Everything listens on and connects to
// 127.0.0.1 only.
type Options struct {
	AdminPort    int // admin interface on 127.0.0.1
	ListenPort   int // downstream listener on 127.0.0.1 (HTTP/1.1 and h2c, codec AUTO)
	UpstreamPort int // backend on 127.0.0.1, spoken to over HTTP/1.1

	// Routes are matched in order, first match wins. Empty means one route
	// "/" to the backend.
	Routes []Route
	// WAF adds the Coraza dynamic-module filter before the router; nil gives
	// vanilla Envoy with an otherwise identical bootstrap.
	WAF *WAFFilter
	// AccessLogPath, if set, writes one JSON object per request (see
	// AccessLogEntry) to this file.
	AccessLogPath string

	// StreamIdleTimeout overrides the HCM stream idle timeout; 0 keeps
	// Envoy's default (5 min).
	StreamIdleTimeout time.Duration
	// RouteTimeout overrides the per-route upstream timeout; 0 keeps Envoy's
	// default (15 s).
	RouteTimeout time.Duration
	// UpgradeTypes are the HCM's upgrade_configs (e.g. "websocket",
	// "CONNECT"): the upgrades Envoy forwards. Empty: Envoy answers every
	// upgrade request 403 before any HTTP filter runs.
	UpgradeTypes []string
	// TLS makes the listener terminate TLS (ALPN h2 and http/1.1, the
	// client's pick); nil listens in clear.
	TLS *TLSFiles
}

// TLSFiles are the listener's certificate chain and key, PEM, as paths
// the Envoy process reads (inside its container on a cluster).
type TLSFiles struct {
	CertChain, PrivateKey string
}

// WAFFilter configures the WAF's dynamic module: corazawaf, or any other
// a module flavor names.
type WAFFilter struct {
	// ModulePath is the absolute path of libcorazawaf.so, loaded through
	// dynamic_module_config.module.local.filename (Envoy >= 1.38), so no
	// ENVOY_DYNAMIC_MODULES_SEARCH_PATH is needed.
	ModulePath string
	// ModuleName is the module's dynamic_module_config.name; default
	// "corazawaf". Envoy loads the file either way; a module may read it.
	ModuleName string
	// FilterName is passed to the module's config hook; default "corazawaf".
	FilterName string
	// ConfigJSON is the filter config, passed to the module unwrapped as a
	// google.protobuf.StringValue. Empty passes an empty string.
	ConfigJSON string
	// MetricsNamespace prefixes the module's metrics; default "corazawaf".
	MetricsNamespace string
	// ConfigAsStruct passes ConfigJSON as a google.protobuf.Struct instead
	// of a StringValue (Envoy gives the module the same JSON either way).
	ConfigAsStruct bool
}

// Route sends a path prefix to the backend.
type Route struct {
	Prefix string
	// PerRouteWAF, if set, is JSON for a DynamicModuleFilterPerRoute
	// filter_config on this route (requires Options.WAF).
	PerRouteWAF *string
}

// withDefaults returns a copy with defaults filled in, leaving the caller's
// value untouched.
func (o Options) withDefaults() Options {
	if len(o.Routes) == 0 {
		o.Routes = []Route{{Prefix: "/"}}
	}
	if o.WAF != nil {
		waf := *o.WAF
		if waf.FilterName == "" {
			waf.FilterName = DefaultFilterName
		}
		if waf.ModuleName == "" {
			waf.ModuleName = ModuleName
		}
		if waf.MetricsNamespace == "" {
			waf.MetricsNamespace = DefaultMetricsNamespace
		}
		o.WAF = &waf
	}
	return o
}

// validate reports every problem at once so a caller fixes them in one go.
func (o Options) validate() error {
	var errs []error
	errs = append(errs, validatePort("AdminPort", o.AdminPort))
	errs = append(errs, validatePort("ListenPort", o.ListenPort))
	errs = append(errs, validatePort("UpstreamPort", o.UpstreamPort))
	errs = append(errs, validateDistinctPorts(o))
	errs = append(errs, validateRoutes(o.Routes, o.WAF != nil))
	if o.WAF != nil {
		errs = append(errs, o.WAF.validate())
	}
	if o.TLS != nil && (!filepath.IsAbs(o.TLS.CertChain) || !filepath.IsAbs(o.TLS.PrivateKey)) {
		// Envoy would resolve them against its own working directory.
		errs = append(errs, fmt.Errorf("TLS files %q and %q must both be absolute paths", o.TLS.CertChain, o.TLS.PrivateKey))
	}
	if o.StreamIdleTimeout < 0 || o.RouteTimeout < 0 {
		errs = append(errs, errors.New("timeouts must not be negative"))
	}
	return errors.Join(errs...)
}

func validatePort(name string, port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("%s %d out of range 1-65535", name, port)
	}
	return nil
}

func validateDistinctPorts(o Options) error {
	if o.AdminPort == o.ListenPort || o.AdminPort == o.UpstreamPort || o.ListenPort == o.UpstreamPort {
		return fmt.Errorf("AdminPort %d, ListenPort %d and UpstreamPort %d must all differ",
			o.AdminPort, o.ListenPort, o.UpstreamPort)
	}
	return nil
}

func validateRoutes(routes []Route, haveWAF bool) error {
	var errs []error
	for i, r := range routes {
		if !strings.HasPrefix(r.Prefix, "/") {
			errs = append(errs, fmt.Errorf("route %d: prefix %q must start with /", i, r.Prefix))
		}
		// Envoy takes the first matching route, so a later route under an
		// earlier prefix would silently never match.
		for j := range i {
			if strings.HasPrefix(r.Prefix, routes[j].Prefix) {
				errs = append(errs, fmt.Errorf("route %d: prefix %q is shadowed by route %d prefix %q; list more specific prefixes first",
					i, r.Prefix, j, routes[j].Prefix))
				break
			}
		}
		if r.PerRouteWAF == nil {
			continue
		}
		if !haveWAF {
			errs = append(errs, fmt.Errorf("route %d (%s): PerRouteWAF set but Options.WAF is nil", i, r.Prefix))
		}
		if !json.Valid([]byte(*r.PerRouteWAF)) {
			errs = append(errs, fmt.Errorf("route %d (%s): PerRouteWAF is not valid JSON", i, r.Prefix))
		}
	}
	return errors.Join(errs...)
}

func (w WAFFilter) validate() error {
	var errs []error
	switch {
	case w.ModulePath == "":
		errs = append(errs, errors.New("WAF.ModulePath is empty: set it to the path of libcorazawaf.so"))
	case !filepath.IsAbs(w.ModulePath):
		// Envoy would resolve it against its own working directory.
		errs = append(errs, fmt.Errorf("WAF.ModulePath %q must be absolute", w.ModulePath))
	}
	if w.ConfigJSON != "" && !json.Valid([]byte(w.ConfigJSON)) {
		errs = append(errs, errors.New("WAF.ConfigJSON is not valid JSON"))
	}
	return errors.Join(errs...)
}

package envoyconfig

import (
	"fmt"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const loopback = "127.0.0.1"

// unlimited is the circuit-breaker threshold: high enough that a sweep
// measures the proxy, never the breaker (Envoy's default is 1024).
const unlimited = 1_000_000

// Build returns a validated bootstrap for opts.
func Build(opts Options) (*bootstrapv3.Bootstrap, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("envoyconfig: invalid options: %w", err)
	}
	opts = opts.withDefaults()
	listener, err := buildListener(opts)
	if err != nil {
		return nil, err
	}
	bootstrap := &bootstrapv3.Bootstrap{
		Admin: &bootstrapv3.Admin{Address: socketAddress(opts.AdminPort)},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Listeners: []*listenerv3.Listener{listener},
			Clusters:  []*clusterv3.Cluster{buildBackendCluster(opts.UpstreamPort)},
		},
	}
	if err := bootstrap.ValidateAll(); err != nil {
		return nil, fmt.Errorf("envoyconfig: generated bootstrap fails validation: %w", err)
	}
	return bootstrap, nil
}

func socketAddress(port int) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{
		SocketAddress: &corev3.SocketAddress{
			Address:       loopback,
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
		},
	}}
}

func buildListener(opts Options) (*listenerv3.Listener, error) {
	hcm, err := buildHCM(opts)
	if err != nil {
		return nil, err
	}
	hcmAny, err := toAny(hcm)
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: wrap http_connection_manager: %w", err)
	}
	chain := &listenerv3.FilterChain{
		Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcmAny},
		}},
	}
	if opts.TLS != nil {
		if chain.TransportSocket, err = buildDownstreamTLS(*opts.TLS); err != nil {
			return nil, err
		}
	}
	return &listenerv3.Listener{
		Name:         ListenerName,
		Address:      socketAddress(opts.ListenPort),
		FilterChains: []*listenerv3.FilterChain{chain},
	}, nil
}

// buildDownstreamTLS terminates TLS with Envoy's defaults (TLS 1.2 and
// 1.3, its default ciphers and curves), offering h2 and http/1.1 by ALPN:
// the codec (AUTO) follows what the client picked.
func buildDownstreamTLS(files TLSFiles) (*corev3.TransportSocket, error) {
	ctx := &tlsv3.DownstreamTlsContext{
		CommonTlsContext: &tlsv3.CommonTlsContext{
			AlpnProtocols: []string{"h2", "http/1.1"},
			TlsCertificates: []*tlsv3.TlsCertificate{{
				CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: files.CertChain}},
				PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: files.PrivateKey}},
			}},
		},
	}
	ctxAny, err := toAny(ctx)
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: wrap the TLS context: %w", err)
	}
	return &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: ctxAny},
	}, nil
}

func buildHCM(opts Options) (*hcmv3.HttpConnectionManager, error) {
	filters, err := buildHTTPFilters(opts.WAF)
	if err != nil {
		return nil, err
	}
	routeConfig, err := buildRouteConfig(opts)
	if err != nil {
		return nil, err
	}
	hcm := &hcmv3.HttpConnectionManager{
		// AUTO accepts HTTP/1.1 and prior-knowledge h2c on the same port.
		CodecType:      hcmv3.HttpConnectionManager_AUTO,
		StatPrefix:     HTTPStatPrefix,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig},
		HttpFilters:    filters,
	}
	for _, t := range opts.UpgradeTypes {
		hcm.UpgradeConfigs = append(hcm.UpgradeConfigs, &hcmv3.HttpConnectionManager_UpgradeConfig{UpgradeType: t})
	}
	if opts.StreamIdleTimeout > 0 {
		hcm.StreamIdleTimeout = durationpb.New(opts.StreamIdleTimeout)
	}
	if opts.AccessLogPath != "" {
		accessLog, err := buildAccessLog(opts.AccessLogPath)
		if err != nil {
			return nil, err
		}
		hcm.AccessLog = append(hcm.AccessLog, accessLog)
	}
	return hcm, nil
}

func buildHTTPFilters(waf *WAFFilter) ([]*hcmv3.HttpFilter, error) {
	routerAny, err := toAny(&routerv3.Router{})
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: wrap router: %w", err)
	}
	router := &hcmv3.HttpFilter{
		Name:       RouterFilterName,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: routerAny},
	}
	if waf == nil {
		return []*hcmv3.HttpFilter{router}, nil
	}
	wafFilter, err := buildWAFHTTPFilter(*waf)
	if err != nil {
		return nil, err
	}
	return []*hcmv3.HttpFilter{wafFilter, router}, nil
}

func buildRouteConfig(opts Options) (*routev3.RouteConfiguration, error) {
	routes := make([]*routev3.Route, 0, len(opts.Routes))
	for _, r := range opts.Routes {
		route, err := buildRoute(r, opts)
		if err != nil {
			return nil, err
		}
		routes = append(routes, route)
	}
	return &routev3.RouteConfiguration{
		Name: "local",
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    BackendClusterName,
			Domains: []string{"*"},
			Routes:  routes,
		}},
	}, nil
}

func buildRoute(r Route, opts Options) (*routev3.Route, error) {
	action := &routev3.RouteAction{
		ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: BackendClusterName},
	}
	if opts.RouteTimeout > 0 {
		action.Timeout = durationpb.New(opts.RouteTimeout)
	}
	route := &routev3.Route{
		Name:   r.Prefix,
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: r.Prefix}},
		Action: &routev3.Route_Route{Route: action},
	}
	if r.PerRouteWAF != nil {
		perRoute, err := buildWAFPerRoute(*opts.WAF, *r.PerRouteWAF)
		if err != nil {
			return nil, fmt.Errorf("envoyconfig: route %s: %w", r.Prefix, err)
		}
		route.TypedPerFilterConfig = map[string]*anypb.Any{HTTPFilterName: perRoute}
	}
	return route, nil
}

func buildBackendCluster(port int) *clusterv3.Cluster {
	endpoint := &endpointv3.LbEndpoint{
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{
			Endpoint: &endpointv3.Endpoint{Address: socketAddress(port)},
		},
	}
	return &clusterv3.Cluster{
		Name:                 BackendClusterName,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(time.Second),
		// No protocol options: the upstream speaks HTTP/1.1, Envoy's default.
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: BackendClusterName,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{
				LbEndpoints: []*endpointv3.LbEndpoint{endpoint},
			}},
		},
		CircuitBreakers: &clusterv3.CircuitBreakers{
			Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
				Priority:           corev3.RoutingPriority_DEFAULT,
				MaxConnections:     wrapperspb.UInt32(unlimited),
				MaxPendingRequests: wrapperspb.UInt32(unlimited),
				MaxRequests:        wrapperspb.UInt32(unlimited),
				MaxRetries:         wrapperspb.UInt32(unlimited),
			}},
		},
	}
}

// toAny wraps m deterministically: anypb.New would serialise maps (e.g. the
// access log's Struct) in random order, making Hash unstable.
func toAny(m proto.Message) (*anypb.Any, error) {
	out := &anypb.Any{}
	if err := anypb.MarshalFrom(out, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return nil, err
	}
	return out, nil
}

package envoyconfig

import (
	"fmt"
	"path/filepath"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// NodeID names the Envoy node of a dynamic bootstrap. Envoy requires a node
// identity before it subscribes to any xDS resource, files included.
const NodeID = "wafsweep"

// BuildListener returns the listener Build would put in a static bootstrap
// for opts, to be served through LDS instead (see BuildDynamic and
// WriteListenersFile). Its name is always ListenerName, so writing a new one
// replaces the running listener rather than adding a second.
func BuildListener(opts Options) (*listenerv3.Listener, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("envoyconfig: invalid options: %w", err)
	}
	listener, err := buildListener(opts.withDefaults())
	if err != nil {
		return nil, err
	}
	if err := listener.ValidateAll(); err != nil {
		return nil, fmt.Errorf("envoyconfig: generated listener fails validation: %w", err)
	}
	return listener, nil
}

// BuildDynamic returns a bootstrap with Build's admin interface and backend
// cluster but no static listener: listeners come from ldsPath, a
// DiscoveryResponse file (WriteListenersFile writes one). Envoy watches the
// file's directory and reloads the file whenever a file is renamed into that
// directory, so replacing it atomically is what triggers a reload.
// opts.ListenPort and opts.WAF are not used here; they belong to the
// listeners.
func BuildDynamic(opts Options, ldsPath string) (*bootstrapv3.Bootstrap, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("envoyconfig: invalid options: %w", err)
	}
	if !filepath.IsAbs(ldsPath) {
		// Envoy would resolve it against its own working directory.
		return nil, fmt.Errorf("envoyconfig: LDS path %q must be absolute", ldsPath)
	}
	opts = opts.withDefaults()
	bootstrap := &bootstrapv3.Bootstrap{
		Node:  &corev3.Node{Id: NodeID, Cluster: NodeID},
		Admin: &bootstrapv3.Admin{Address: socketAddress(opts.AdminPort)},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Clusters: []*clusterv3.Cluster{buildBackendCluster(opts.UpstreamPort)},
		},
		DynamicResources: &bootstrapv3.Bootstrap_DynamicResources{LdsConfig: watchedFileSource(ldsPath)},
	}
	if err := bootstrap.ValidateAll(); err != nil {
		return nil, fmt.Errorf("envoyconfig: generated dynamic bootstrap fails validation: %w", err)
	}
	return bootstrap, nil
}

// watchedFileSource is an xDS source read from path and re-read on every
// rename into its directory. Watching the directory (not the file) is what
// makes an atomic rename visible: the old inode Envoy watched is gone.
func watchedFileSource(path string) *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion: corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{
			Path:             path,
			WatchedDirectory: &corev3.WatchedDirectory{Path: filepath.Dir(path)},
		}},
	}
}

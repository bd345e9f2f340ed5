// Package bootstrap makes the Envoy bootstrap of a Kubernetes deployment
// from the same typed bootstrap the local target runs (package
// envoyconfig), so the two targets measure the same Envoy configuration.
// Only addresses and paths change: the listener binds the pod's address,
// the backend is addressed by its pod IP, the module and the rule files are
// those inside the pod.
package bootstrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev1 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
)

// Options is one Envoy deployment's bootstrap.
type Options struct {
	ListenHost string // 0.0.0.0 on a pod network, 127.0.0.1 with host networking
	ListenPort int
	AdminPort  int // the admin interface stays on 127.0.0.1 inside the pod
	// BackendHost is the backend pod's IP (127.0.0.1 with host networking),
	// or a DNS name resolved by Envoy (the static manifests).
	BackendHost string
	BackendPort int
	// WAFConfigJSON is the sweep's corazawaf filter_config; empty for
	// vanilla Envoy.
	WAFConfigJSON string
	ModulePath    string // inside the image
	// AuditLogDir replaces the directory of an audit_log path (the
	// orchestrator's run directory does not exist in the pod).
	AuditLogDir string
	// TLS, the certificate's files inside the pod, makes the listener
	// terminate TLS; nil listens in clear.
	TLS *envoyconfig.TLSFiles
}

// Built is a bootstrap ready for a ConfigMap.
type Built struct {
	JSON []byte
	Hash string // envoyconfig.Hash: names the ConfigMap, marks the pod template
	// WAFConfigJSON is the filter config as the pod gets it (rule files
	// inlined), for the run directory's record.
	WAFConfigJSON string
}

// Build returns the bootstrap for opts.
func Build(opts Options) (Built, error) {
	eo := envoyconfig.Options{AdminPort: opts.AdminPort, ListenPort: opts.ListenPort, UpstreamPort: opts.BackendPort, TLS: opts.TLS}
	var wafJSON string
	if opts.WAFConfigJSON != "" {
		var err error
		wafJSON, err = PodWAFConfig(opts.WAFConfigJSON, opts.AuditLogDir)
		if err != nil {
			return Built{}, err
		}
		eo.WAF = &envoyconfig.WAFFilter{ModulePath: opts.ModulePath, ConfigJSON: wafJSON}
	}
	b, err := envoyconfig.Build(eo)
	if err != nil {
		return Built{}, err
	}
	if err := readdress(b, opts); err != nil {
		return Built{}, err
	}
	if err := b.ValidateAll(); err != nil {
		return Built{}, fmt.Errorf("bootstrap: readdressed bootstrap fails validation: %w", err)
	}
	out, err := envoyconfig.MarshalJSON(b)
	if err != nil {
		return Built{}, err
	}
	hash, err := envoyconfig.Hash(b)
	if err != nil {
		return Built{}, err
	}
	return Built{JSON: out, Hash: hash, WAFConfigJSON: wafJSON}, nil
}

// readdress points the listener at ListenHost and the backend cluster at
// BackendHost; envoyconfig builds both on 127.0.0.1.
func readdress(b *bootstrapv3.Bootstrap, opts Options) error {
	if opts.ListenHost == "" || opts.BackendHost == "" {
		return errors.New("bootstrap: ListenHost and BackendHost are required")
	}
	static := b.GetStaticResources()
	if len(static.GetListeners()) != 1 || len(static.GetClusters()) != 1 {
		return errors.New("bootstrap: expected one listener and one cluster from envoyconfig")
	}
	setHost(static.Listeners[0].GetAddress(), opts.ListenHost)
	cluster := static.Clusters[0]
	if net.ParseIP(opts.BackendHost) == nil {
		// A name (the manifests' headless Service): resolved to the
		// backend pod's IP, still pod to pod.
		cluster.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		cluster.DnsLookupFamily = clusterv3.Cluster_V4_ONLY
	}
	for _, eps := range cluster.GetLoadAssignment().GetEndpoints() {
		for _, ep := range eps.GetLbEndpoints() {
			setHost(ep.GetEndpoint().GetAddress(), opts.BackendHost)
		}
	}
	return nil
}

func setHost(a *corev1.Address, host string) {
	if sa := a.GetSocketAddress(); sa != nil {
		sa.Address = host
	}
}

// maxIncludeDepth bounds nested local Includes (and include cycles).
const maxIncludeDepth = 8

// PodWAFConfig rewrites the sweep's filter config for a pod: `Include` of
// a local rule file (the sweep names the tier file by its path on this
// machine) becomes the file's text, so the rules travel in the bootstrap;
// embedded names (@owasp_crs/...) stay, the module has them. An audit log
// moves to auditDir.
func PodWAFConfig(configJSON, auditDir string) (string, error) {
	var cfg map[string]any
	if err := json.Unmarshal([]byte(configJSON), &cfg); err != nil {
		return "", fmt.Errorf("bootstrap: WAF config: %w", err)
	}
	if raw, ok := cfg["directives"].([]any); ok {
		var out []any
		for _, d := range raw {
			s, ok := d.(string)
			if !ok {
				return "", fmt.Errorf("bootstrap: WAF config: directive %v is not a string", d)
			}
			inlined, err := inline(s, 0)
			if err != nil {
				return "", err
			}
			out = append(out, inlined)
		}
		cfg["directives"] = out
	}
	if log, ok := cfg["audit_log"].(string); ok && log != "" && auditDir != "" {
		cfg["audit_log"] = filepath.Join(auditDir, filepath.Base(log))
	}
	b, err := json.Marshal(cfg)
	return string(b), err
}

// inline replaces `Include /local/file` lines of text by the file's text.
func inline(text string, depth int) (string, error) {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		path, ok := localInclude(line)
		if !ok {
			continue
		}
		if depth >= maxIncludeDepth {
			return "", fmt.Errorf("bootstrap: includes nested deeper than %d at %s", maxIncludeDepth, path)
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("bootstrap: inlining a rule file: %w", err)
		}
		body, err := inline(strings.ReplaceAll(string(content), "\r\n", "\n"), depth+1)
		if err != nil {
			return "", err
		}
		lines[i] = strings.TrimRight(body, "\n")
	}
	return strings.Join(lines, "\n"), nil
}

// localInclude recognises `Include /absolute/path` (not an embedded @name,
// not a glob).
func localInclude(line string) (string, bool) {
	fields := strings.Fields(line)
	if len(fields) != 2 || !strings.EqualFold(fields[0], "Include") {
		return "", false
	}
	path := strings.Trim(fields[1], `"'`)
	if !filepath.IsAbs(path) || strings.ContainsAny(path, "*?[") {
		return "", false
	}
	return path, true
}

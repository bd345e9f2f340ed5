// Package target defines where a sweep runs its configurations: the local
// machine (package local) or a Kubernetes cluster. A target deploys a
// configuration (backend, proxy), runs load against it, and accounts the
// proxy's resources; the sweep package drives it and never cares which one
// it has.
package target

import (
	"context"
	"fmt"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/tlscert"
)

// Target deploys configurations.
type Target interface {
	// Name is dataset.TargetLocal, TargetKind or TargetKube.
	Name() string
	// Describe reports what metadata.json records about the target.
	Describe() Description
	// Deploy starts what cfg needs and returns it ready for load (the
	// proxy's admin answered /ready).
	Deploy(ctx context.Context, d Deployment) (Deployed, error)
}

// ConfigValidator is a target that can have its proxy validate the config
// of a deployment without starting it (Envoy's --mode validate), so that a
// config a module refuses fails before a sweep starts.
type ConfigValidator interface {
	ValidateConfig(ctx context.Context, d Deployment) error
}

// Deployment is one configuration to deploy.
type Deployment struct {
	Config plan.Config
	// WAFConfigJSON is the filter_config of WAF flavors: corazawaf's, or
	// the module flavor's (Module).
	WAFConfigJSON string
	// Module is the module flavor's spec; nil for the built-in flavors.
	Module *moduleflavor.Spec
	// RunDir is where the deployment may write its config and logs.
	RunDir string
	// AuditLog is the path WAFConfigJSON names as the audit log (audit_log),
	// empty when the configuration writes none; a target that moves the log
	// (into a pod) keeps its base name.
	AuditLog string
	// Protocol is what the load generator speaks to the proxy (the
	// backend, for the direct flavor): plan.ProtocolH1 or ProtocolH2, empty
	// read as HTTP/1.1. Behind the proxy the backend speaks HTTP/1.1.
	Protocol string
	// TLS is the run's certificate, which the proxy (the backend, for
	// direct) serves; nil listens in clear.
	TLS *tlscert.Files
}

// HTTP2 reports whether the load speaks HTTP/2 to the deployment.
func (d Deployment) HTTP2() bool { return d.Protocol == plan.ProtocolH2 }

// Scheme is the URL scheme the deployment's listener serves: https when
// it has a certificate.
func (d Deployment) Scheme() string {
	if d.TLS != nil {
		return "https"
	}
	return "http"
}

// ListenerURL is the URL a deployment listening on 127.0.0.1:port serves.
func (d Deployment) ListenerURL(port int) string {
	return fmt.Sprintf("%s://127.0.0.1:%d", d.Scheme(), port)
}

// Deployed is a running configuration.
type Deployed interface {
	// URL is the base URL the load generator targets (http://127.0.0.1:port,
	// https:// over TLS).
	URL() string
	// RunLoad runs one constant-throughput step against URL: the runs of
	// specs sent together over one window, as loadgen.RunAll runs them
	// (one for a plain shape; a mixed shape's members, attacks beside the
	// load). It returns their union and each run's own result.
	RunLoad(ctx context.Context, specs []loadgen.Spec) (all loadgen.Result, each []loadgen.Result, err error)
	// Usage samples the proxy's resources now.
	Usage() (Usage, error)
	// Restarted reports whether the proxy exited or restarted since Deploy.
	Restarted() bool
	// LoadgenCores is the number of CPUs the load generator may use: its CPU
	// budget per second.
	LoadgenCores() int
	// ProxyCores is the number of CPUs the proxy may use (its cpuset or its
	// CPU limit): a step whose proxy used more is a measuring error. 0
	// when there is no proxy or no bound.
	ProxyCores() float64
	// Teardown stops everything Deploy started.
	Teardown() error
}

// LocalProxy is implemented by targets whose proxy runs on this machine,
// pinned to CPUs the sweep can probe before it deploys anything there (a
// cluster's node is another machine).
type LocalProxy interface {
	// ProxyCPU is the first CPU the proxy is pinned to.
	ProxyCPU() int
}

// ProxyCounter is implemented by deployments whose proxy counts the
// requests it completed. The sweep samples it at the measured window's
// edges to cross-check the load generator's count.
type ProxyCounter interface {
	// ProxyCompleted is the proxy's cumulative count of completed
	// downstream requests.
	ProxyCompleted() (int64, error)
}

// Usage is a sample of the proxy's resources. For the direct flavor (no
// proxy) every field is zero.
type Usage struct {
	ProxyCPUSeconds   float64 // cumulative, all processes of the flavor
	ProxyRSSBytes     uint64  // now
	ProxyPeakRSSBytes uint64  // lifetime high-water mark
	// BackendCPUSeconds is cumulative; negative when the backend shares the
	// load generator's process and cannot be accounted apart.
	BackendCPUSeconds float64
	// ProxyThrottledSeconds is the proxy's cumulative CFS throttling
	// (Kubernetes targets); negative where there is no CPU quota to read.
	ProxyThrottledSeconds float64
	// StealSeconds is the cumulative time the hypervisor took from the CPUs
	// of what is measured (the proxy's, or the backend's for the direct
	// flavor); negative where it cannot be read.
	StealSeconds float64
	// ProxyWrittenBytes is what the proxy's processes have written to
	// storage so far (procstat.WrittenBytes: the audit log, and any other
	// file they write); negative where it cannot be read.
	ProxyWrittenBytes int64
	// AuditLogBytes is the size of the deployment's audit log now;
	// negative when it writes none or it cannot be read.
	AuditLogBytes int64
}

// Description is what the metadata records about a target.
type Description struct {
	CoreAssignment map[string]string // role -> CPU list
	Notes          []string
	// CPUModel and Cores name the processor of the proxy's machine, so
	// that the sweep's identity covers it; empty when the target cannot
	// tell yet (a cluster before its proxy node is known): the metadata
	// then names this machine's.
	CPUModel string
	Cores    int
}

// StealReader is implemented by deployments that can read the steal of
// their measured CPUs on their own, cheaply enough to do it every second
// of the window.
type StealReader interface {
	// StealSeconds is the cumulative time the hypervisor took from the
	// measured CPUs; negative when it cannot be read.
	StealSeconds() float64
}

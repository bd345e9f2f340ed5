package kube

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/rollout"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
	"github.com/wafsweep/wafsweep/orchestrator/tlscert"
)

// A TLS sweep on a cluster: the run's certificate (made by the sweep, valid
// for its Host name and 127.0.0.1) goes into the namespace as a Secret,
// which Envoy mounts, and the backend too when the direct flavor is the
// edge. The pre-check reaches the pods through port-forwards at 127.0.0.1;
// the load generator pod connects to pod IPs and verifies the certificate
// for the Host name, as a client that looked that name up (loadgen.Spec's
// Resolve), so the certificate never has to name an address it cannot know
// before the pods exist.

// ensureTLS puts files into the TLS Secret, once per certificate, and
// returns its fingerprint; "" and nothing applied for nil (clear).
func (k *Kube) ensureTLS(ctx context.Context, files *tlscert.Files) (string, error) {
	if files == nil {
		return "", nil
	}
	k.mu.Lock()
	applied := k.tlsApplied == files.Fingerprint
	k.mu.Unlock()
	if applied {
		return files.Fingerprint, nil
	}
	chain, err := os.ReadFile(files.Cert)
	if err != nil {
		return "", fmt.Errorf("the run's certificate: %w", err)
	}
	key, err := os.ReadFile(files.Key)
	if err != nil {
		return "", fmt.Errorf("the run's certificate: %w", err)
	}
	if err := k.applier.Secret(ctx, spec.TLSSecret(k.opts.Spec, chain, key, files.Fingerprint)); err != nil {
		return "", err
	}
	k.mu.Lock()
	k.tlsApplied = files.Fingerprint
	k.mu.Unlock()
	return files.Fingerprint, nil
}

// ensureBackendTLS has the backend serve TLS with the certificate of
// fingerprint beside its clear port: the first time (and after a new
// certificate) it rolls the backend, waits for the new pod and verifies
// its placement again, as Prepare did.
func (k *Kube) ensureBackendTLS(ctx context.Context, fingerprint string) error {
	k.mu.Lock()
	current := k.backendPod.Annotations[spec.AnnotationTLSFingerprint]
	k.mu.Unlock()
	if current == fingerprint {
		return nil
	}
	o := k.opts.Spec
	k.progress("rolling the backend to serve TLS on port %d beside port %d", o.Ports.BackendTLS, o.Ports.Backend)
	if _, err := k.applier.Deployment(ctx, spec.BackendDeployment(o, fingerprint)); err != nil {
		return err
	}
	if _, err := rollout.Deployment(ctx, k.client, o.Namespace, spec.Backend, k.opts.RolloutTimeout); err != nil {
		return err
	}
	pod, err := rollout.RunningPod(ctx, k.client, o.Namespace, spec.Selector(spec.Backend), spec.AnnotationTLSFingerprint, fingerprint, k.opts.RolloutTimeout)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.backendPod = pod
	k.mu.Unlock()
	return k.replace(ctx, "backend")
}

// dataPlaneSpec points a run the sweep aimed at the control URL (a
// port-forward) at the pod it measures. Over TLS the URL names the Host
// the run sends and Resolve the pod's address: the certificate is verified
// for the name.
func dataPlaneSpec(s loadgen.Spec, controlURL, dataURL string) (loadgen.Spec, error) {
	rest, ok := strings.CutPrefix(s.URL, controlURL)
	if !ok {
		return s, fmt.Errorf("load URL %s is not under the deployment's URL %s", s.URL, controlURL)
	}
	s.URL = dataURL + rest
	if !strings.HasPrefix(dataURL, "https://") {
		return s, nil
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return s, err
	}
	host := s.Host
	if host == "" {
		host = loadgen.DefaultHost
	}
	s.Resolve = u.Hostname()
	u.Host = host + ":" + u.Port()
	s.URL = u.String()
	return s, nil
}

// Package portforward opens port-forwards to pods through the API server,
// as `kubectl port-forward` does (WebSocket tunnel, falling back to SPDY).
// The Kubernetes targets use them for control only: Envoy's admin and the
// pre-check, the load generator's API, the cgroup agents. Load never goes
// through a port-forward.
package portforward

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	streamhttp "k8s.io/streaming/pkg/httpstream"
)

// Tunnel forwards local ports on 127.0.0.1 to ports of one pod.
type Tunnel struct {
	Namespace, Pod string

	local   map[int32]int // pod port -> local port
	stop    chan struct{}
	done    chan struct{}
	errOut  *lockedBuffer
	stopped sync.Once
	err     error
}

// Open forwards the pod's ports and returns once they listen locally.
func Open(cfg *rest.Config, client kubernetes.Interface, namespace, pod string, ports ...int32) (*Tunnel, error) {
	url := client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err)
	}
	dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	tunneling, err := portforward.NewSPDYOverWebsocketDialerForStreaming(url, cfg)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err)
	}
	dialer = portforward.NewFallbackDialerForStreaming(tunneling, dialer, func(err error) bool {
		return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
	})
	specs := make([]string, len(ports))
	for i, p := range ports {
		specs[i] = "0:" + strconv.Itoa(int(p))
	}
	t := &Tunnel{Namespace: namespace, Pod: pod, stop: make(chan struct{}), done: make(chan struct{}), errOut: &lockedBuffer{}}
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, specs, t.stop, ready, io.Discard, t.errOut)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err)
	}
	go func() {
		t.err = fw.ForwardPorts()
		close(t.done)
	}()
	select {
	case <-ready:
	case <-t.done:
		return nil, fmt.Errorf("port-forward to %s/%s: %w %s", namespace, pod, t.err, t.errOut.String())
	}
	forwarded, err := fw.GetPorts()
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err)
	}
	t.local = map[int32]int{}
	for _, p := range forwarded {
		t.local[int32(p.Remote)] = int(p.Local)
	}
	return t, nil
}

// Addr is the local host:port forwarded to the pod's port.
func (t *Tunnel) Addr(podPort int32) string {
	return "127.0.0.1:" + strconv.Itoa(t.local[podPort])
}

// URL is http://Addr(podPort).
func (t *Tunnel) URL(podPort int32) string { return "http://" + t.Addr(podPort) }

// Err reports why the tunnel ended, nil while it is open.
func (t *Tunnel) Err() error {
	select {
	case <-t.done:
		if t.err == nil {
			return errors.New("port-forward closed")
		}
		return t.err
	default:
		return nil
	}
}

// Close ends the forward.
func (t *Tunnel) Close() {
	t.stopped.Do(func() { close(t.stop) })
	<-t.done
}

// lockedBuffer collects the forwarder's error output (written from its
// goroutines) for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 4096 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

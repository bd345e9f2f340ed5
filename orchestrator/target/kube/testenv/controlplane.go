// Package testenv starts a real Kubernetes control plane on 127.0.0.1 for
// the Kubernetes targets' tests: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler built from the Go module proxy
// by .ci/kube-binaries, plus either kwok fake nodes or one real kubelet with
// containerd. Every process is started by the test and ended by its PID;
// nothing listens beyond 127.0.0.1, nothing pulls an image.
package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// BinariesEnv names the directory of prebuilt binaries; unset, the tests
// ask .ci/kube-binaries where its cache is.
const BinariesEnv = "WAFSWEEP_KUBE_BIN"

var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"}

// BinDir finds the built binaries, or says how to build them.
func BinDir(repoRoot string) (string, error) {
	dir := os.Getenv(BinariesEnv)
	if dir == "" {
		out, err := exec.Command(filepath.Join(repoRoot, ".ci", "kube-binaries"), "--dir").Output()
		if err != nil {
			return "", fmt.Errorf(".ci/kube-binaries --dir: %w", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	var missing []string
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%v missing in %s: build them with .ci/kube-binaries (make test does)", missing, dir)
	}
	return dir, nil
}

// ControlPlane is a running etcd, kube-apiserver, controller-manager and
// scheduler.
type ControlPlane struct {
	Dir        string // certificates, kubeconfig, logs, etcd data
	BinDir     string
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	APIPort    int

	pki   *pki
	procs []*process
}

// StartControlPlane starts the control plane in dir and waits until the API
// server is ready and the default service account exists.
func StartControlPlane(ctx context.Context, binDir, dir string) (*ControlPlane, error) {
	cp := &ControlPlane{Dir: dir, BinDir: binDir}
	if err := cp.start(ctx); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) bin(name string) string { return filepath.Join(cp.BinDir, name) }

func (cp *ControlPlane) start(ctx context.Context) error {
	pkiDir := filepath.Join(cp.Dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return err
	}
	var err error
	if cp.pki, err = newPKI(pkiDir); err != nil {
		return err
	}
	if err := cp.pki.issue("apiserver", "kube-apiserver", "", true); err != nil {
		return err
	}
	// One client identity for every component and the tests: the test
	// cluster's authorization is not what is under test.
	if err := cp.pki.issue("admin", "admin", "system:masters", false); err != nil {
		return err
	}
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, etcdMetrics, api, cmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	cp.APIPort = api
	loop := func(p int) string { return "http://127.0.0.1:" + strconv.Itoa(p) }
	etcd, err := start(cp.Dir, "etcd", cp.bin("etcd"),
		"--name", "default", "--data-dir", filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls", loop(etcdClient), "--advertise-client-urls", loop(etcdClient),
		"--listen-peer-urls", loop(etcdPeer), "--initial-advertise-peer-urls", loop(etcdPeer),
		"--initial-cluster", "default="+loop(etcdPeer), "--listen-metrics-urls", loop(etcdMetrics),
		"--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, etcd)
	p := cp.pki.path
	apiserver, err := start(cp.Dir, "kube-apiserver", cp.bin("kube-apiserver"),
		"--etcd-servers", loop(etcdClient),
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(api),
		// 127.0.0.1 "may not be in the loopback range" for the endpoint
		// reconciler, which would make the API server exit.
		"--endpoint-reconciler-type", "none",
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"),
		"--client-ca-file", p("ca.crt"),
		"--service-account-key-file", p("sa.pub"), "--service-account-signing-key-file", p("sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--authorization-mode", "RBAC",
		"--kubelet-client-certificate", p("admin.crt"), "--kubelet-client-key", p("admin.key"),
		"--kubelet-preferred-address-types", "InternalIP",
		"--allow-privileged=true", "--profiling=false", "--enable-priority-and-fairness=false",
		"--v=1")
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, apiserver)
	if err := cp.writeKubeconfig(); err != nil {
		return err
	}
	if err := cp.waitAPI(ctx, apiserver); err != nil {
		return err
	}
	cm, err := start(cp.Dir, "kube-controller-manager", cp.bin("kube-controller-manager"),
		"--kubeconfig", cp.Kubeconfig, "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(cmPort),
		// Controller names changed in 1.37; node IPAM and volume
		// controllers have nothing to do here.
		"--controllers", "*,-node-ipam-controller,-persistentvolume-binder-controller,-persistentvolume-attach-detach-controller",
		"--service-account-private-key-file", p("sa.key"), "--root-ca-file", p("ca.crt"),
		"--use-service-account-credentials=false", "--v=1")
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, cm)
	sched, err := start(cp.Dir, "kube-scheduler", cp.bin("kube-scheduler"),
		"--kubeconfig", cp.Kubeconfig, "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(schedPort), "--v=1")
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, sched)
	return nil
}

func (cp *ControlPlane) writeKubeconfig() error {
	p := cp.pki.path
	server := "https://127.0.0.1:" + strconv.Itoa(cp.APIPort)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: p("ca.crt")}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: p("admin.crt"), ClientKey: p("admin.key")}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	cfg.CurrentContext = "test"
	cp.Kubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, cp.Kubeconfig); err != nil {
		return err
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		return err
	}
	restCfg.QPS, restCfg.Burst = 100, 200
	cp.Config = restCfg
	cp.Client, err = kubernetes.NewForConfig(restCfg)
	return err
}

// waitAPI waits for /readyz, then for the default namespace's service
// account (pods cannot be created before it).
func (cp *ControlPlane) waitAPI(ctx context.Context, apiserver *process) error {
	ca, err := os.ReadFile(cp.pki.path("ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(cp.pki.path("admin.crt"), cp.pki.path("admin.key"))
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
	}}
	url := "https://127.0.0.1:" + strconv.Itoa(cp.APIPort) + "/readyz"
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if apiserver.exited() {
			return fmt.Errorf("kube-apiserver exited:\n%s", apiserver.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after 90 s:\n%s", apiserver.tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Healthy reports the first component that exited, with its log.
func (cp *ControlPlane) Healthy() error {
	for _, p := range cp.procs {
		if p.exited() {
			return fmt.Errorf("%s exited:\n%s", p.name, p.tail())
		}
	}
	return nil
}

// Stop ends every process in reverse start order, by PID.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].stop(10 * time.Second)
	}
	cp.procs = nil
}

// add registers a process started on top of the control plane (kwok, a
// kubelet) so that Stop ends it first.
func (cp *ControlPlane) add(p *process) { cp.procs = append(cp.procs, p) }

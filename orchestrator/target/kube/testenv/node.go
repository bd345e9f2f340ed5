package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A real node: kubelet v1.37 with Debian's containerd 1.6 and runc, the
// static CPU manager, host-network pods only (there is no pod network:
// the only CNI plugin is loopback). Needs root.

var errNotRoot = errors.New("not root: a kubelet and containerd need root")

// NodeRequirements says why a real node cannot run here, or nil.
func NodeRequirements(binDir string) error {
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	var missing []string
	for _, tool := range []string{"containerd", "runc", "ctr", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/loopback"); err != nil {
		missing = append(missing, "/usr/lib/cni/loopback (containernetworking-plugins)")
	}
	if _, err := os.Stat(filepath.Join(binDir, "kubelet")); err != nil {
		missing = append(missing, "kubelet (.ci/kube-binaries)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s (make kube-node-packages installs Debian's)", strings.Join(missing, ", "))
	}
	return nil
}

// NodeOptions configure the real node.
type NodeOptions struct {
	Name   string
	Labels map[string]string
	// Archive is a docker-archive tarball of every image the pods use,
	// the sandbox (pause) image included: nothing is ever pulled.
	Archive    string
	PauseImage string
}

// Node is a running kubelet and containerd.
type Node struct {
	Name       string
	dir        string
	sock       string
	containerd *process
	kubelet    *process
}

// StartNode starts containerd and a kubelet registering as opts.Name, and
// waits until the node is Ready.
func (cp *ControlPlane) StartNode(ctx context.Context, opts NodeOptions) (*Node, error) {
	if err := NodeRequirements(cp.BinDir); err != nil {
		return nil, err
	}
	dir := filepath.Join(cp.Dir, "node")
	n := &Node{Name: opts.Name, dir: dir, sock: filepath.Join(dir, "containerd.sock")}
	if err := n.start(ctx, cp, opts); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

func (n *Node) start(ctx context.Context, cp *ControlPlane, opts NodeOptions) error {
	for _, d := range []string{"cni", "containerd-root", "containerd-state", "kubelet", "pod-logs", "volume-plugins"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	// Only the loopback plugin: it makes the runtime's network "ready",
	// and host-network pods need nothing more.
	cni := `{"cniVersion":"1.0.0","name":"wafsweep-loopback","plugins":[{"type":"loopback"}]}`
	if err := os.WriteFile(filepath.Join(n.dir, "cni", "10-loopback.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # The test sandbox lacks CAP_SYS_RESOURCE: without this runc fails with
  # "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, filepath.Join(n.dir, "containerd-root"), filepath.Join(n.dir, "containerd-state"), n.sock, opts.PauseImage, filepath.Join(n.dir, "cni"))
	configPath := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	var err error
	if n.containerd, err = start(n.dir, "containerd", "containerd", "--config", configPath, "--log-level", "warn"); err != nil {
		return err
	}
	if err := waitFile(ctx, n.sock, n.containerd); err != nil {
		return err
	}
	if out, err := n.ctr(ctx, "images", "import", opts.Archive); err != nil {
		return fmt.Errorf("importing %s: %w\n%s", opts.Archive, err, out)
	}
	if err := cp.pki.issue("kubelet", opts.Name, "", true); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	kubeletConfig := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
cgroupDriver: cgroupfs
failCgroupV1: false
cpuManagerPolicy: static
# A fractional system reservation: the static policy keeps CPU 0 out of the
# exclusive pool, while the scheduler still sees 1.9 CPUs.
systemReserved:
  cpu: 100m
enforceNodeAllocatable: ["pods"]
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization: {mode: AlwaysAllow}
tlsCertFile: %q
tlsPrivateKeyFile: %q
failSwapOn: false
podLogsDir: %q
volumePluginDir: %q
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
serializeImagePulls: false
`, ports[0], ports[1], n.sock, cp.pki.path("ca.crt"), cp.pki.path("kubelet.crt"), cp.pki.path("kubelet.key"),
		filepath.Join(n.dir, "pod-logs"), filepath.Join(n.dir, "volume-plugins"))
	kubeletConfigPath := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(kubeletConfigPath, []byte(kubeletConfig), 0o644); err != nil {
		return err
	}
	var labels []string
	for k, v := range opts.Labels {
		labels = append(labels, k+"="+v)
	}
	sort.Strings(labels)
	n.kubelet, err = start(n.dir, "kubelet", cp.bin("kubelet"),
		"--config", kubeletConfigPath, "--kubeconfig", cp.Kubeconfig,
		"--root-dir", filepath.Join(n.dir, "kubelet"), "--cert-dir", filepath.Join(n.dir, "kubelet-pki"),
		"--hostname-override", opts.Name, "--node-ip", "127.0.0.1",
		"--node-labels", strings.Join(labels, ","), "--v=1")
	if err != nil {
		return err
	}
	cp.add(n.kubelet)
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if n.kubelet.exited() {
			return false, fmt.Errorf("kubelet exited:\n%s", n.kubelet.tail())
		}
		node, err := cp.Client.CoreV1().Nodes().Get(ctx, opts.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if len(node.Status.Addresses) == 0 {
			// The kubelet refuses a loopback node IP ("nodeIP can't be
			// loopback address") and so reports none; the API server needs
			// one to reach it (exec, port-forward). With --node-ip set the
			// kubelet never overwrites what is set here.
			node.Status.Addresses = []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
				{Type: corev1.NodeHostName, Address: opts.Name},
			}
			if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
				return false, nil
			}
		}
		return nodeReady(node), nil
	})
}

func (n *Node) ctr(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", n.sock, "--namespace", "k8s.io"}, args...)...)
	return cmd.CombinedOutput()
}

// Log is the end of the kubelet's log, for failures.
func (n *Node) Log() string {
	if n.kubelet == nil {
		return ""
	}
	return n.kubelet.tail()
}

// Stop ends the kubelet, kills what containerd still runs, stops
// containerd and its shims (by PID, found by this node's socket on their
// command line), unmounts what they mounted under the node's directory
// (pod volumes, rootfs, shm) and removes the pods' cgroups. Pods should have
// been deleted through the API first.
func (n *Node) Stop() error {
	var errs []error
	if n.kubelet != nil {
		n.kubelet.stop(10 * time.Second)
	}
	if n.containerd != nil && !n.containerd.exited() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, _ := n.ctr(ctx, "tasks", "ls", "-q")
		for _, id := range strings.Fields(string(out)) {
			n.ctr(ctx, "tasks", "kill", "--all", "--signal", "SIGKILL", id)
		}
		for _, id := range strings.Fields(string(out)) {
			n.ctr(ctx, "tasks", "delete", "--force", id)
		}
		cancel()
		n.containerd.stop(10 * time.Second)
	}
	errs = append(errs, killShims(n.sock))
	errs = append(errs, unmountUnder(n.dir))
	removePodCgroups()
	return errors.Join(errs...)
}

// killShims ends containerd-shim processes serving this node's socket.
func killShims(sock string) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.Contains(args[0], "containerd-shim") && strings.Contains(string(cmdline), sock) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// unmountUnder detaches every mount below dir, deepest first, so that
// removing dir never reaches into a volume.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, unescapeMount(fields[4]))
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removePodCgroups removes the empty kubepods cgroups the kubelet made
// (cgroup v1, cgroupfs driver), deepest first.
func removePodCgroups() {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		roots = append(roots, "/sys/fs/cgroup/kubepods")
	}
	for _, root := range roots {
		var dirs []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			syscall.Rmdir(d)
		}
	}
}

func waitFile(ctx context.Context, path string, p *process) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited:\n%s", p.name, p.tail())
		}
		_, err := os.Stat(path)
		return err == nil, nil
	})
}

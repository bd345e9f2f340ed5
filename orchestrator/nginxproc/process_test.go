package nginxproc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/childproc"
	"github.com/wafsweep/wafsweep/orchestrator/nginxconfig"
	"github.com/wafsweep/wafsweep/orchestrator/proctree"
)

func installation(t *testing.T) nginxconfig.Installation {
	t.Helper()
	inst, err := nginxconfig.Find()
	if err != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatalf("real nginx needed: %v", err)
		}
		t.Skipf("real nginx needed: %v", err)
	}
	return inst
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// plainNginx writes a configuration without ModSecurity (process control
// does not depend on it) in front of upstreamPort.
func plainNginx(t *testing.T, upstreamPort int, cpus []int) Options {
	t.Helper()
	inst := installation(t)
	dir := t.TempDir()
	o := nginxconfig.Options{ListenPort: freePort(t), UpstreamPort: upstreamPort, CPUs: cpus, RunDir: dir}
	if os.Geteuid() == 0 {
		o.User = "root"
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := nginxconfig.Write(conf, o); err != nil {
		t.Fatal(err)
	}
	return Options{Binary: inst.Binary, ConfigPath: conf, ErrorLog: o.ErrorLog(), PIDFile: o.PIDFile(),
		ListenPort: o.ListenPort, Workers: o.Workers(), CPUs: cpus}
}

func startNginx(t *testing.T, opts Options) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

func startBackend(t *testing.T) *backend.Server {
	t.Helper()
	s, err := backend.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func get(t *testing.T, port int) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/api/orders", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "wafsweep.test"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// proxyCPUs is the CPU set the tests pin nginx to: the last CPU, as the
// local target's default proxy set ends there.
func proxyCPUs() []int { return []int{runtime.NumCPU() - 1} }

func TestNginxProxiesIsAccountedAndStops(t *testing.T) {
	be := startBackend(t)
	opts := plainNginx(t, be.Port(), proxyCPUs())
	p := startNginx(t, opts)
	if status := get(t, opts.ListenPort); status != http.StatusOK {
		t.Fatalf("GET through nginx: %d", status)
	}
	members, err := proctree.Members(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1+opts.Workers {
		t.Errorf("members %v: want the master and %d worker(s)", members, opts.Workers)
	}
	for _, pid := range members {
		cpus, err := childproc.Affinity(pid)
		if err != nil {
			t.Fatal(err)
		}
		if !sameOrSubset(cpus, proxyCPUs()) {
			t.Errorf("pid %d runs on %v, want %v", pid, cpus, proxyCPUs())
		}
	}
	u, err := p.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.Processes != len(members) || u.RSSBytes == 0 || u.PSSBytes == 0 || u.PeakRSSBytes < u.RSSBytes {
		t.Errorf("usage %+v", u)
	}
	if p.Restarted() {
		t.Error("Restarted() before anything happened")
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, pid := range members {
		if running(pid) {
			t.Errorf("pid %d still runs after Stop", pid)
		}
	}
	if !p.Restarted() {
		t.Error("Restarted() is false after the master exited")
	}
}

// nginx replaces a crashed worker without a word: the sweep must see it.
func TestReplacedWorkerCountsAsRestart(t *testing.T) {
	be := startBackend(t)
	p := startNginx(t, plainNginx(t, be.Port(), nil))
	worker := p.workers[0].pid
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !p.Restarted() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !p.Restarted() {
		t.Fatal("a killed worker was not reported as a restart")
	}
}

func TestStartReportsNginxsErrorAndLeavesNothingRunning(t *testing.T) {
	be := startBackend(t)
	opts := plainNginx(t, be.Port(), nil)
	// Another listener on the port: nginx cannot bind and exits.
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", opts.ListenPort))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Start(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "Address already in use") {
		t.Fatalf("err = %v, want nginx's bind error quoted", err)
	}
}

func TestStartTimesOutWithoutWorkers(t *testing.T) {
	be := startBackend(t)
	opts := plainNginx(t, be.Port(), nil)
	opts.Workers = 3 // the configuration starts one: never ready
	opts.StartTimeout = 500 * time.Millisecond
	_, err := Start(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("err = %v, want a readiness timeout", err)
	}
	if raw, err := os.ReadFile(opts.PIDFile); err == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(raw))); pid > 0 && running(pid) {
			t.Errorf("nginx %d still runs after a failed Start", pid)
		}
	}
}

// orphanHelperEnv makes the test binary act as a sweep that starts nginx
// and dies without stopping it.
const orphanHelperEnv = "NGINXPROC_ORPHAN_HELPER_DIR"

func TestOrphanHelper(t *testing.T) {
	dir := os.Getenv(orphanHelperEnv)
	if dir == "" {
		t.Skip("helper process for TestNginxDiesWithItsParent")
	}
	be := startBackend(t)
	p, err := Start(context.Background(), plainNginx(t, be.Port(), nil))
	if err != nil {
		t.Fatal(err)
	}
	members, err := proctree.Members(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, m := range members {
		pids = append(pids, strconv.Itoa(m))
	}
	if err := os.WriteFile(filepath.Join(dir, "pids"), []byte(strings.Join(pids, " ")), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Exit(0) // die without Stop
}

func TestNginxDiesWithItsParent(t *testing.T) {
	installation(t)
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$")
	// The helper exits without its cleanup: its own temporary
	// directories go under ours, which this test removes.
	helper.Env = append(os.Environ(), orphanHelperEnv+"="+dir, "TMPDIR="+dir)
	if out, err := helper.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if len(pids) < 2 {
		t.Fatalf("helper saw %v: want a master and a worker", pids)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		alive := 0
		for _, pid := range pids {
			if running(pid) {
				alive++
			}
		}
		if alive == 0 {
			return
		}
	}
	for _, pid := range pids {
		if running(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // don't leave it behind
			t.Errorf("nginx process %d outlived the sweep that started it", pid)
		}
	}
}

// running reports whether pid exists and is not a zombie (PID 1 here does
// not reap promptly).
func running(pid int) bool {
	st, err := proctree.ReadStat(pid)
	return err == nil && st.State != "Z"
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"complete", Options{ConfigPath: "c", ErrorLog: "e", PIDFile: "p", ListenPort: 80}, ""},
		{"missing paths", Options{ListenPort: 80}, "are required"},
		{"bad port", Options{ConfigPath: "c", ErrorLog: "e", PIDFile: "p"}, "ListenPort 0"},
		{"negative", Options{ConfigPath: "c", ErrorLog: "e", PIDFile: "p", ListenPort: 80, Workers: -1}, "must not be negative"},
		{"bad CPU", Options{ConfigPath: "c", ErrorLog: "e", PIDFile: "p", ListenPort: 80, CPUs: []int{-2}}, "CPU -2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

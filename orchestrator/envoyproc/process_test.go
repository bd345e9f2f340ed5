package envoyproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/childproc"
	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
)

func envoyBinary(t *testing.T) string {
	t.Helper()
	bin, err := FindBinary()
	if err != nil {
		t.Skipf("skipping: no Envoy binary: %v", err)
	}
	return bin
}

// vanillaEnvoy writes a vanilla bootstrap in front of upstreamPort and
// returns options to start it.
func vanillaEnvoy(t *testing.T, upstreamPort int) (Options, int) {
	t.Helper()
	ports, err := FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, err := envoyconfig.Build(envoyconfig.Options{AdminPort: ports[0], ListenPort: ports[1], UpstreamPort: upstreamPort})
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "envoy.json")
	if err := envoyconfig.WriteFile(config, b); err != nil {
		t.Fatal(err)
	}
	return Options{
		Binary:     envoyBinary(t),
		ConfigPath: config,
		LogPath:    filepath.Join(dir, "envoy.log"),
		AdminPort:  ports[0],
	}, ports[1]
}

func startEnvoy(t *testing.T, opts Options) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
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

func getThrough(t *testing.T, port int, path string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
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
	return resp.StatusCode, resp.Header
}

// waitForStat polls because Envoy counts a request when its stream ends,
// which can be just after the client has the response.
func waitForStat(t *testing.T, p *Process, name string, want uint64) {
	t.Helper()
	var got uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		stats, err := p.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got = stats[name]; got == want {
			return
		}
	}
	t.Fatalf("stat %s = %d, want %d", name, got, want)
}

func TestEnvoyProxiesReportsAndStops(t *testing.T) {
	be := startBackend(t)
	opts, listenPort := vanillaEnvoy(t, be.Port())
	p := startEnvoy(t, opts)
	ctx := context.Background()

	const requests = 3
	for i := range requests {
		status, header := getThrough(t, listenPort, fmt.Sprintf("/r%d", i))
		if status != http.StatusOK || header.Get(backend.HeaderBodyBytes) != "0" {
			t.Fatalf("request %d: status %d headers %v", i, status, header)
		}
	}
	if got := be.Stats().Requests; got != requests {
		t.Errorf("backend saw %d requests, want %d", got, requests)
	}
	if host := be.Recent()[0].Host; host != "wafsweep.test" {
		t.Errorf("backend saw Host %q", host)
	}
	waitForStat(t, p, "cluster.backend.upstream_rq_200", requests)
	waitForStat(t, p, "http.ingress_http.downstream_rq_2xx", requests)

	prom, err := p.PrometheusStats(ctx)
	if err != nil || !strings.Contains(prom, "envoy_cluster_upstream_rq_total") {
		t.Errorf("Prometheus stats (err %v) lack envoy_cluster_upstream_rq_total", err)
	}
	info, err := p.ServerInfo(ctx)
	if err != nil || info.State != "LIVE" || !strings.Contains(info.Version, "/1.40") {
		t.Errorf("ServerInfo = %+v, %v", info, err)
	}
	if restarted, err := p.Restarted(ctx, info); err != nil || restarted {
		t.Errorf("Restarted = %v, %v while running", restarted, err)
	}

	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !p.Exited() || p.ExitError() != nil {
		t.Errorf("after Stop: exited %v, exit error %v", p.Exited(), p.ExitError())
	}
	if restarted, err := p.Restarted(ctx, info); err != nil || !restarted {
		t.Errorf("Restarted = %v, %v after Stop", restarted, err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartFailsWithEnvoysErrorOnBadConfig(t *testing.T) {
	opts, _ := vanillaEnvoy(t, 1)
	if err := os.WriteFile(opts.ConfigPath, []byte(`{"static_resources": {"no_such_field": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err := Start(context.Background(), opts)
	if err == nil {
		t.Fatal("Start succeeded on a bad config")
	}
	t.Logf("Start error:\n%v", err)
	for _, want := range []string{"exited during start-up", "no_such_field"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if elapsed := time.Since(began); elapsed > 20*time.Second {
		t.Errorf("took %v to report a rejected config", elapsed)
	}
}

func TestStartTimesOutWhenAdminNeverReady(t *testing.T) {
	opts, _ := vanillaEnvoy(t, 1)
	wrong, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	opts.AdminPort, opts.StartTimeout = wrong, time.Second // nothing answers there
	_, err = Start(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("not ready on admin port %d", wrong)) {
		t.Fatalf("err = %v, want a readiness timeout", err)
	}
}

func TestStartRejectsAnotherEnvoyOnTheAdminPort(t *testing.T) {
	be := startBackend(t)
	first, _ := vanillaEnvoy(t, be.Port())
	startEnvoy(t, first)
	second, _ := vanillaEnvoy(t, be.Port())
	second.AdminPort = first.AdminPort // the clash a port race would cause
	_, err := Start(context.Background(), second)
	if err == nil || !(strings.Contains(err.Error(), "answers for another Envoy") || strings.Contains(err.Error(), "exited during start-up")) {
		t.Fatalf("err = %v, want the clash detected", err)
	}
	t.Log(err)
}

func TestCPUPinningReachesEveryThread(t *testing.T) {
	be := startBackend(t)
	opts, _ := vanillaEnvoy(t, be.Port())
	opts.CPUs, opts.Concurrency = []int{0}, 2
	p := startEnvoy(t, opts)
	threads, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) < 3 {
		t.Fatalf("only %d threads: workers not started?", len(threads))
	}
	for _, th := range threads {
		tid, err := strconv.Atoi(th.Name())
		if err != nil {
			t.Fatal(err)
		}
		cpus, err := Affinity(tid)
		if err != nil {
			t.Fatal(err)
		}
		if !sameCPUs(cpus, []int{0}) {
			t.Errorf("thread %d runs on %v, want [0]", tid, cpus)
		}
	}
}

// fakeEnvoy writes a shell script standing in for Envoy, to reach the
// paths a real Envoy rarely takes.
func fakeEnvoy(t *testing.T, script string) Options {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "envoy")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Binary: bin, ConfigPath: "unused.json", LogPath: filepath.Join(dir, "log"), AdminPort: port}
}

func TestStartTimeoutLeavesNothingRunning(t *testing.T) {
	opts := fakeEnvoy(t, "")
	pidFile := filepath.Join(t.TempDir(), "pid")
	if err := os.WriteFile(opts.Binary, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts.StartTimeout = 300 * time.Millisecond
	if _, err := Start(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("err = %v, want a readiness timeout", err)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d still exists after a failed Start (kill 0: %v)", pid, err)
	}
}

func TestStopKillsAProcessIgnoringSIGTERM(t *testing.T) {
	opts := fakeEnvoy(t, "trap '' TERM\nexec sleep 30")
	opts, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	opts.StopGrace = 200 * time.Millisecond
	p, err := launch(opts)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the trap be installed
	err = p.Stop()
	if !errors.Is(err, childproc.ErrKilled) {
		t.Errorf("Stop err = %v, want it to report the kill", err)
	}
	if !p.Exited() {
		t.Error("process still running after Stop")
	}
}

func TestStartReportsEarlyExitWithLogTail(t *testing.T) {
	opts := fakeEnvoy(t, "echo first line\necho 'critical: config rejected' >&2\nexit 3")
	_, err := Start(context.Background(), opts)
	if err == nil {
		t.Fatal("Start succeeded")
	}
	for _, want := range []string{"exit status 3", "first line", "critical: config rejected"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestStartPassesArgumentsAndEnvironment(t *testing.T) {
	opts := fakeEnvoy(t, `echo "args: $*"; echo "env: $WAFSWEEP_TEST_VAR"; exit 1`)
	opts.Env = []string{"WAFSWEEP_TEST_VAR=hello"}
	opts.ComponentLogLevel = "dynamic_modules:debug"
	opts.FileFlushInterval = 250 * time.Millisecond
	_, err := Start(context.Background(), opts)
	want := fmt.Sprintf("args: -c unused.json --concurrency 1 --base-id %d -l warning --disable-hot-restart --file-flush-interval-msec 250 --component-log-level dynamic_modules:debug", opts.AdminPort)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "env: hello") {
		t.Errorf("err = %v\nwant it to contain %q and the environment", err, want)
	}
}

// orphanHelperEnv makes the test binary act as a parent that launches a
// fake Envoy and dies without stopping it.
const orphanHelperEnv = "ENVOYPROC_ORPHAN_HELPER_PIDFILE"

func TestOrphanHelper(t *testing.T) {
	pidFile := os.Getenv(orphanHelperEnv)
	if pidFile == "" {
		t.Skip("helper process for TestEnvoyDiesWithItsParent")
	}
	opts := fakeEnvoy(t, "echo $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"\nexec sleep 30")
	opts, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := launch(opts); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(pidFile); err == nil {
			os.Exit(0) // die without Stop
		}
	}
	t.Fatal("fake envoy never wrote its pid")
}

func TestEnvoyDiesWithItsParent(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	helper := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$")
	// The helper exits without its cleanup: its own temporary
	// directories go under ours, which this test removes.
	helper.Env = append(os.Environ(), orphanHelperEnv+"="+pidFile, "TMPDIR="+dir)
	if out, err := helper.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !running(pid) {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL) // don't leave it behind
	t.Fatalf("child %d outlived its parent", pid)
}

// running reports whether pid exists and is not a zombie waiting for a
// reaper that may never come (PID 1 here does not reap promptly).
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

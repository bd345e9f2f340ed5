package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
)

// sweepBinary builds wafsweep for a test that runs it against real Envoy,
// and returns its path and the arguments of a short two-flavor sweep
// writing to results/<id>.
func sweepBinary(t *testing.T, results, id string) (bin string, args []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds wafsweep and runs real Envoy")
	}
	if _, err := envoyproc.FindBinary(); err != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin = filepath.Join(t.TempDir(), "wafsweep")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin, []string{"sweep", "--flavors", "direct,envoy", "--shapes", "get", "--ladder", "100,200", "--floor", "0",
		"--connections", "4", "--warmup", "200ms", "--measure", "1s", "--cooldown", "0s", "--results", results, "--sweep-id", id}
}

// SIGKILL at a random moment among steps, twice, then the same command
// again: no finished step lost, none duplicated, the CSV always parses,
// no Envoy or backend outlives the sweep.
func TestSIGKILLThenResume(t *testing.T) {
	results := t.TempDir()
	bin, args := sweepBinary(t, results, "kill")
	seed := time.Now().UnixNano()
	t.Logf("kill moments seeded with %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	stepsFile := filepath.Join(results, "kill", sweep.StepsFile)
	var kept []dataset.StepRow
	for kill := range 2 {
		cmd, stderr := startSweep(t, bin, args)
		// Among steps: after 1-2 finished ones, at a random moment into
		// the next. A timer from the start lands in the CPU probe or the
		// first deployment, before any step.
		progress := bufio.NewScanner(stderr)
		finished := waitForSteps(progress, 1+rng.IntN(2), io.Discard)
		time.Sleep(time.Duration(rng.IntN(2500)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		t.Logf("kill %d after %d steps of this run", kill, finished)
		if left := processesLeft(t, results, bin); len(left) > 0 {
			t.Fatalf("processes left after SIGKILL: %q", left)
		}
		rows, err := dataset.ReadSteps(stepsFile)
		if err != nil {
			t.Fatalf("after kill %d steps.csv does not parse: %v", kill, err)
		}
		assertPrefix(t, kept, rows)
		// A step's progress line follows its fsynced row.
		if len(rows) < len(kept)+finished {
			t.Fatalf("kill %d: %d steps recorded, but %d before it and %d finished since", kill, len(rows), len(kept), finished)
		}
		kept = rows
		t.Logf("kill %d: %d steps recorded", kill, len(rows))
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	rows, err := dataset.ReadSteps(stepsFile)
	if err != nil {
		t.Fatal(err)
	}
	assertPrefix(t, kept, rows)
	// Every configuration's knee search is complete: replaying its steps
	// leaves nothing to measure (how many steps that took depends on what
	// passed, which a loaded machine can change).
	byConfig := map[string][]dataset.StepRow{}
	for _, r := range rows {
		byConfig[r.ConfigID] = append(byConfig[r.ConfigID], r)
	}
	p, _ := (sweepFlags{profile: "short", flavors: "direct,envoy", shapes: "get", ladder: "100,200", floor: 0}).buildPlan()
	for _, id := range []string{"direct/none/get", "envoy/none/get"} {
		var steps []knee.Step
		for _, r := range dataset.CapacitySteps(byConfig[id]) { // SLO steps replay in their own searches
			steps = append(steps, r.KneeStep())
		}
		search, err := knee.Replay(p.Ladder, p.KneeOptions(), steps)
		if err != nil {
			t.Fatalf("%s: recorded steps do not replay: %v", id, err)
		}
		if _, _, done := search.Next(); !done {
			t.Fatalf("%s: the search was not finished by the resumed run\n%s", id, out)
		}
	}
	seen := map[string]bool{}
	for _, r := range rows {
		key := fmt.Sprintf("%s/%d", r.ConfigID, r.Seq)
		if seen[key] {
			t.Fatalf("step %s recorded twice", key)
		}
		seen[key] = true
	}
	if _, err := dataset.ReadKnees(filepath.Join(results, "kill", sweep.KneesFile)); err != nil {
		t.Fatal(err)
	}
}

// assertPrefix checks that every earlier row is still there, unchanged.
func assertPrefix(t *testing.T, before, after []dataset.StepRow) {
	t.Helper()
	if len(after) < len(before) {
		t.Fatalf("steps lost: %d before, %d after", len(before), len(after))
	}
	for i, r := range before {
		if after[i].ConfigID != r.ConfigID || after[i].Seq != r.Seq || !after[i].StartedAt.Equal(r.StartedAt) {
			t.Fatalf("step %d changed: %+v -> %+v", i, r, after[i])
		}
	}
}

// Ctrl-C after some load runs have ended stops the sweep at once, with
// exit code 130, the resume hint, every finished step kept and no process
// of its own left behind. Fortio, when a run has no Aborter of its own,
// catches SIGINT itself and resets it when the run ends, which would take
// it away from the sweep: a Ctrl-C then either aborts only the current
// step or kills the sweep without its teardown.
func TestSIGINTStopsTheSweep(t *testing.T) {
	results := t.TempDir()
	bin, args := sweepBinary(t, results, "interrupt")
	cmd, stderr := startSweep(t, bin, args)
	const stepsBefore = 3
	var output strings.Builder
	if steps := waitForSteps(bufio.NewScanner(stderr), stepsBefore, &output); steps < stepsBefore {
		cmd.Wait()
		t.Fatalf("the sweep ended after %d steps:\n%s", steps, output.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	interrupted := time.Now()
	killer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer killer.Stop()
	rest, _ := io.ReadAll(stderr)
	output.Write(rest)
	err := cmd.Wait()
	t.Logf("stopped %v after SIGINT", time.Since(interrupted).Round(time.Millisecond))
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("after SIGINT the sweep exited with %v (code %d), want code 130:\n%s", err, code, output.String())
	}
	if !strings.Contains(output.String(), "run the same command again to resume") {
		t.Errorf("no resume hint after SIGINT:\n%s", output.String())
	}
	rows, err := dataset.ReadSteps(filepath.Join(results, "interrupt", sweep.StepsFile))
	if err != nil || len(rows) < stepsBefore {
		t.Errorf("after SIGINT steps.csv holds %d steps (%v), want at least %d", len(rows), err, stepsBefore)
	}
	if left := processesLeft(t, results, bin); len(left) > 0 {
		t.Errorf("processes left after SIGINT: %q", left)
	}
}

// startSweep starts the sweep binary and returns its progress output
// (stderr), which the caller reads to the end before cmd.Wait.
func startSweep(t *testing.T, bin string, args []string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

// waitForSteps reads a sweep's progress, copying it to log, until n steps
// have finished or the output ends, and returns how many finished.
func waitForSteps(progress *bufio.Scanner, n int, log io.Writer) int {
	steps := 0
	for steps < n && progress.Scan() {
		fmt.Fprintln(log, progress.Text())
		if strings.Contains(progress.Text(), " rps: ") {
			steps++
		}
	}
	return steps
}

// processesLeft lists the command lines of running processes that name
// any of marks (the sweep's Envoy reads its configuration from the results
// directory, and its backend is the wafsweep binary), after giving them a
// few seconds to end: the kernel's parent-death signal is asynchronous.
func processesLeft(t *testing.T, marks ...string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		found := processesMentioning(t, marks)
		if len(found) == 0 || time.Now().After(deadline) {
			return found
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func processesMentioning(t *testing.T, marks []string) []string {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, path := range cmdlines {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // ended meanwhile
		}
		cmdline := strings.ReplaceAll(string(raw), "\x00", " ")
		for _, mark := range marks {
			if strings.Contains(cmdline, mark) {
				found = append(found, cmdline)
				break
			}
		}
	}
	return found
}

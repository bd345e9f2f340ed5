package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/cpuprobe"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
)

// SIGKILL at a random moment, twice, then the same command again: no
// finished step lost, none duplicated, the CSV always parses.
func TestSIGKILLThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds wafsweep and runs real Envoy")
	}
	if _, err := envoyproc.FindBinary(); err != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin := filepath.Join(t.TempDir(), "wafsweep")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	results := t.TempDir()
	args := []string{"sweep", "--flavors", "direct,envoy", "--shapes", "get", "--ladder", "100,200", "--floor", "0",
		"--connections", "4", "--warmup", "200ms", "--measure", "1s", "--cooldown", "0s", "--results", results, "--sweep-id", "kill"}
	seed := time.Now().UnixNano()
	t.Logf("kill moments seeded with %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	stepsFile := filepath.Join(results, "kill", sweep.StepsFile)
	var kept []dataset.StepRow
	for kill := range 2 {
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// After the sweep's CPU probe, so that the kill lands among steps.
		time.Sleep(cpuprobe.DefaultDuration + time.Duration(1000+rng.IntN(4000))*time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		rows, err := dataset.ReadSteps(stepsFile)
		// Killed before steps.csv was created (the sweep probes the proxy's
		// CPU first): nothing recorded yet. ReadSteps wraps the error, which
		// os.IsNotExist does not unwrap.
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after kill %d steps.csv does not parse: %v", kill, err)
		}
		assertPrefix(t, kept, rows)
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

package dataset_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/internal/repofiles"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// No committed file names a path of the machine that made it: neither
// this checkout's nor the usual roots of a home, a workspace or a
// temporary directory.
func TestCommittedDatasetsArePortable(t *testing.T) {
	repo, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	roots := dataset.MachineRoots("", repo)
	for _, generic := range []string{"/work", "/home", "/root", "/tmp", "/var/tmp", "/mnt"} {
		roots = append(roots, dataset.PathRoot{Path: generic})
	}
	files, err := repofiles.Committed("results")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no committed results found")
	}
	for _, path := range files {
		data, err := readMaybeGzipped(path)
		if err != nil {
			t.Fatal(err)
		}
		if found := dataset.FindMachinePaths(data, roots); len(found) > 0 {
			rel, _ := filepath.Rel(repo, path)
			t.Errorf("%s names machine paths: %q", rel, found[:min(len(found), 3)])
		}
	}
}

func readMaybeGzipped(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// Every committed sweep dataset is of the current schema, reads back
// whole, and its knees.csv and slo_knees.csv are what this version derives
// from its steps.csv and plan: a layout change regenerates or migrates
// them, and a change to how they are derived (a new status, a new rule for
// old plans) re-derives them with `wafsweep report`, so no figure in
// results/ is one the reader cannot open or the tool no longer stands
// behind.
func TestEveryCommittedSweepReadsAndIsCurrent(t *testing.T) {
	dirs, err := repofiles.CommittedDirs("results", dataset.MetadataFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no committed sweep dataset found")
	}
	for _, dir := range dirs {
		rel := filepath.Join(filepath.Base(filepath.Dir(dir)), filepath.Base(dir))
		sw, err := dataset.ReadSweep(dir)
		switch {
		case err != nil:
			t.Errorf("%s: %v", rel, err)
		case sw.Meta.SchemaVersion != dataset.SchemaVersion:
			t.Errorf("%s: schema %d, the reader's is %d", rel, sw.Meta.SchemaVersion, dataset.SchemaVersion)
		case len(sw.Steps) == 0 || len(sw.Knees) == 0:
			t.Errorf("%s: %d steps and %d knees", rel, len(sw.Steps), len(sw.Knees))
		default:
			checkDerivedAreCurrent(t, rel, dir, sw)
		}
	}
}

// checkDerivedAreCurrent compares a sweep's derived files, byte for byte,
// with what its steps derive now.
func checkDerivedAreCurrent(t *testing.T, rel, dir string, sw dataset.Sweep) {
	t.Helper()
	derived := t.TempDir()
	d, err := dataset.Derive(sw.Steps, sw.Meta.Plan)
	if err == nil {
		err = d.Write(derived)
	}
	if err != nil {
		t.Errorf("%s: %v", rel, err)
		return
	}
	for _, name := range []string{dataset.KneesFile, dataset.SLOKneesFile} {
		committed, err1 := os.ReadFile(filepath.Join(dir, name))
		current, err2 := os.ReadFile(filepath.Join(derived, name))
		switch {
		case err1 != nil || err2 != nil:
			t.Errorf("%s/%s: %v %v", rel, name, err1, err2)
		case !bytes.Equal(committed, current):
			t.Errorf("%s/%s differs from what its steps.csv derives now: run `wafsweep report %s`", rel, name, rel)
		}
	}
}

// cpuSlack is how far over its CPUs a role's measured CPU time may read:
// the window's edges and the CPU counters are sampled a moment apart.
const cpuSlack = 1.02

// No committed step reports more CPU than its role was given: a proxy
// pinned to one core never used more than one core's seconds in a window,
// and neither did a direct sweep's backend, whose CPU its cores per 1k
// RPS are. A figure over that is a fault of the accounting, whatever else
// it says.
func TestCommittedFiguresArePhysicallyPossible(t *testing.T) {
	dirs, err := repofiles.CommittedDirs("results", dataset.MetadataFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		rel := filepath.Join(filepath.Base(filepath.Dir(dir)), filepath.Base(dir))
		sw, err := dataset.ReadSweep(dir)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		proxy, err1 := procstat.ParseCPUList(sw.Meta.CoreAssignment["proxy"])
		backend, err2 := procstat.ParseCPUList(sw.Meta.CoreAssignment["backend"])
		if err1 != nil || err2 != nil || len(proxy) == 0 || len(backend) == 0 {
			t.Errorf("%s: core assignment %v: %v %v", rel, sw.Meta.CoreAssignment, err1, err2)
			continue
		}
		for _, s := range sw.Steps {
			if s.WindowS <= 0 {
				continue
			}
			checkCores(t, rel, s, "proxy", s.ProxyCPUS/s.WindowS, len(proxy))
			if s.Flavor == plan.FlavorDirect {
				checkCores(t, rel, s, "backend", s.BackendCPUS/s.WindowS, len(backend))
			}
		}
	}
}

func checkCores(t *testing.T, rel string, s dataset.StepRow, role string, cores float64, given int) {
	t.Helper()
	if cores > cpuSlack*float64(given) {
		t.Errorf("%s: %s round %d step %d (%s at %d RPS): the %s used %.3f cores over the window, and had %d",
			rel, s.ConfigID, s.Round, s.Seq, s.Kind, s.TargetRPS, role, cores, given)
	}
}

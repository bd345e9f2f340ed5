package dataset_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
)

// committedResults lists the files under results/ that git tracks (a sweep
// running into results/ meanwhile is not committed yet); outside a git
// checkout, every file there.
func committedResults(t *testing.T, repo string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z", "results").Output()
	if err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, filepath.Join(repo, f))
			}
		}
		return files
	}
	var files []string
	err = filepath.WalkDir(filepath.Join(repo, "results"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

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
	files := committedResults(t, repo)
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

// Package repofiles lists the files of the repository that are committed,
// so that tests about committed data read only what a clean checkout
// holds, never a dataset a local sweep has just written beside it.
package repofiles

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
)

// Committed returns the absolute paths of the files under dir (relative to
// the repository's root, found from the working directory) that git
// tracks. Outside a git checkout (an unpacked source archive) every file
// under dir counts as committed.
func Committed(dir string) ([]string, error) {
	repo, err := envoyproc.RepoRoot()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z", "--", dir).Output()
	if err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, filepath.Join(repo, f))
			}
		}
		return files, nil
	}
	var files []string
	err = filepath.WalkDir(filepath.Join(repo, dir), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	return files, nil
}

// CommittedDirs returns the directories under dir that hold a committed
// file named name (a dataset's metadata.json, say), sorted.
func CommittedDirs(dir, name string) ([]string, error) {
	files, err := Committed(dir)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, f := range files {
		if filepath.Base(f) == name {
			dirs = append(dirs, filepath.Dir(f))
		}
	}
	return dirs, nil
}

package soak

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	soakDuration = flag.Duration("soak.duration", 2*time.Minute,
		"how long to drive load at 80% of the knee (`make soak` uses 30m)")
	soakOut = flag.String("soak.out", "",
		"directory for rss.csv, summary.json and stall.json; default a temporary directory removed after the test")
	stallDuration = flag.Duration("stall.duration", 30*time.Second,
		"how long each run of the stall test lasts (GETs alone, then with large bodies)")
)

// outputDir is -soak.out, created if needed, or a temporary directory.
func outputDir(t *testing.T) string {
	t.Helper()
	if *soakOut == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(*soakOut, 0o755); err != nil {
		t.Fatalf("soak output directory: %v", err)
	}
	return *soakOut
}

// shownPath names an output path in the log relative to the repository
// when it is inside it: the log is committed with the soak's results, and
// the machine's paths have no place there.
func shownPath(path string) string {
	wd, err := os.Getwd() // the package's directory, filter/soak
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(filepath.Join(wd, "..", ".."), path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

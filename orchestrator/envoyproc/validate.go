package envoyproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Validate runs Envoy's own `--mode validate` on the bootstrap at
// configPath, with env added to Envoy's environment as Start adds it: Envoy
// builds every listener and filter without serving, so a dynamic module is
// loaded and its config hook runs. A bootstrap Envoy refuses is an error
// quoting Envoy's error lines, the module's own message among them.
func Validate(ctx context.Context, binary, configPath string, env []string) error {
	if binary == "" {
		bin, err := FindBinary()
		if err != nil {
			return err
		}
		binary = bin
	}
	cmd := exec.CommandContext(ctx, binary, "--mode", "validate", "-c", configPath,
		"--disable-hot-restart", "-l", "warning")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	return fmt.Errorf("Envoy refused the bootstrap: %w\n%s", err, errorLines(string(out)))
}

// errorLines keeps Envoy's warning, error and critical log lines (a
// module may give its reason at any of them: corazawaf as an error, others
// as a warning), or all of its output when none is one (a crash in a
// module's hook).
func errorLines(out string) string {
	var keep []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, "][warning][") || strings.Contains(line, "][error][") || strings.Contains(line, "][critical][") {
			keep = append(keep, line)
		}
	}
	if len(keep) == 0 {
		return strings.TrimSpace(out)
	}
	return strings.Join(keep, "\n")
}

// Package envvars checks the NAME=VALUE lists a sweep adds to Envoy's
// environment: the plan's envoy_env and a module flavor's env.
package envvars

import (
	"fmt"
	"regexp"
	"strings"
)

var name = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Check reports the entries of env that are not NAME=VALUE and the names
// given twice, naming field and showing example as the fix.
func Check(field, example string, env []string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, e := range env {
		k, _, ok := strings.Cut(e, "=")
		switch {
		case !ok || !name.MatchString(k):
			errs = append(errs, fmt.Errorf("%s %q: write NAME=VALUE, e.g. %s", field, e, example))
		case seen[k]:
			errs = append(errs, fmt.Errorf("%s: %s set twice: keep one", field, k))
		}
		seen[k] = true
	}
	return errs
}

// Names are the variables env sets.
func Names(env []string) []string {
	names := make([]string, 0, len(env))
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		names = append(names, k)
	}
	return names
}

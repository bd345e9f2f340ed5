// Package crscorpus gives the accelerator's tests realistic inputs: every
// string of the CRS regression suite (payloads, URIs, headers), URL-decoded
// as well as raw, and the candidate rules of the full CRS.
package crscorpus

import (
	"io/fs"
	"net/url"
	"slices"
	"strings"
	"testing"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	crstests "github.com/corazawaf/coraza-coreruleset/v4/tests"
	"go.yaml.in/yaml/v3"

	"github.com/wafsweep/wafsweep/filter/accel/ruleplan"
	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// Strings returns up to limit distinct strings of at most maxLen bytes
// found in the suite's YAML files, in a stable order.
func Strings(limit, maxLen int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s == "" || len(s) > maxLen || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
	}
	err := fs.WalkDir(crstests.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := fs.ReadFile(crstests.FS, path)
		if err != nil {
			return err
		}
		var doc any
		if yaml.Unmarshal(data, &doc) != nil {
			return nil
		}
		walk(doc, func(s string) {
			add(s)
			if u, err := url.QueryUnescape(s); err == nil {
				add(u)
				for _, part := range strings.FieldsFunc(u, func(r rune) bool { return r == '&' || r == '=' || r == '?' }) {
					add(part)
				}
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	if len(out) > limit {
		// Spread the sample over the whole sorted list.
		step := float64(len(out)) / float64(limit)
		sample := make([]string, 0, limit)
		for i := 0; i < limit; i++ {
			sample = append(sample, out[int(float64(i)*step)])
		}
		out = sample
	}
	return out, nil
}

func walk(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	case map[string]any:
		for _, e := range x {
			walk(e, f)
		}
	}
}

// TestStrings is Strings for a test: a tenth of limit with -short, and a
// failed test if the suite cannot be read.
func TestStrings(t testing.TB, limit, maxLen int) []string {
	t.Helper()
	if testing.Short() {
		limit /= 10
	}
	out, err := Strings(limit, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Candidates returns the candidate rules of CRS v4.25 (all paranoia
// levels) as the accelerator's analysis finds them.
func Candidates() ([]ruleplan.Candidate, error) {
	ds, err := seclang.Read(coreruleset.FS, "Include @crs-setup.conf.example\nInclude @owasp_crs/*.conf")
	if err != nil {
		return nil, err
	}
	rs, err := seclang.Parse(ds)
	if err != nil {
		return nil, err
	}
	return ruleplan.Analyze(rs).Candidates, nil
}

// Expressions returns the candidates that are @rx rules Coraza compiles
// with Go's regexp (Candidate.Expr is set).
func Expressions() ([]ruleplan.Candidate, error) {
	cands, err := Candidates()
	return slices.DeleteFunc(cands, func(c ruleplan.Candidate) bool { return c.Expr == "" }), err
}

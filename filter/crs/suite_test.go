package crs

import (
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	crstests "github.com/corazawaf/coraza-coreruleset/v4/tests"
	schema "github.com/coreruleset/ftw-tests-schema/v2/types"
	"github.com/coreruleset/go-ftw/v2/test"
	"go.yaml.in/yaml/v3"
)

// loadSuite reads every test file of the embedded CRS regression suite and
// splits it into one FTWTest per stage of each test case:
//   - go-ftw aborts a whole run on a request error (no response, no log
//     marker), so a unit that cannot finish must cost only itself;
//   - go-ftw's RunTest scores a test case by its last stage only, so a
//     failing earlier stage would pass unnoticed; classify fails a test case
//     when any of its stages fails. Stages are independent requests unless
//     one saves a cookie for the next, so such a test case stays whole (none
//     in CRS v4.25.0 does).
func loadSuite() ([]*test.FTWTest, error) {
	var units []*test.FTWTest
	err := fs.WalkDir(crstests.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := fs.ReadFile(crstests.FS, path)
		if err != nil {
			return fmt.Errorf("reading CRS test %s: %w", path, err)
		}
		file, err := test.GetTestFromYaml(data, path)
		if err != nil {
			return fmt.Errorf("parsing CRS test %s: %w", path, err)
		}
		for _, tc := range file.Tests {
			for _, stages := range independentStages(tc) {
				one := tc
				one.Stages = stages
				unit := *file
				unit.Tests = []schema.Test{one}
				units = append(units, &unit)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(units) == 0 {
		return nil, fmt.Errorf("no test cases in the embedded CRS regression suite")
	}
	return units, nil
}

// independentStages splits a test case's stages into runs that need no
// state from each other.
func independentStages(tc schema.Test) [][]schema.Stage {
	for _, stage := range tc.Stages {
		if stage.Input.SaveCookie != nil && *stage.Input.SaveCookie {
			return [][]schema.Stage{tc.Stages}
		}
	}
	runs := make([][]schema.Stage, 0, len(tc.Stages))
	for i := range tc.Stages {
		runs = append(runs, tc.Stages[i:i+1:i+1])
	}
	return runs
}

// ignoreGroups are the sections of testdata/ignored.yaml: who a known
// failure is charged to.
var ignoreGroups = []string{"coraza", "envoy", "module"}

// ignoreEntry is one known failure.
type ignoreEntry struct {
	group  string // coraza, envoy or module
	reason string
}

var testIDPattern = regexp.MustCompile(`^\d+-\d+$`)

// loadIgnored reads the known failures: group -> test id -> reason. Ids
// are exact (go-ftw's own ignore keys are unanchored regular expressions,
// where "920100-4" would also swallow 920100-40).
func loadIgnored(path string) (map[string]ignoreEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the ignore list: %w", err)
	}
	var groups map[string]map[string]string
	if err := yaml.Unmarshal(data, &groups); err != nil {
		return nil, fmt.Errorf("parsing the ignore list %s: %w", path, err)
	}
	ignored := map[string]ignoreEntry{}
	for group, entries := range groups {
		if !slices.Contains(ignoreGroups, group) {
			return nil, fmt.Errorf("ignore list %s: unknown section %q, want one of %v", path, group, ignoreGroups)
		}
		for id, reason := range entries {
			switch {
			case !testIDPattern.MatchString(id):
				return nil, fmt.Errorf("ignore list %s: %q is not a test id like 920100-4", path, id)
			case strings.TrimSpace(reason) == "":
				return nil, fmt.Errorf("ignore list %s: %s has no reason", path, id)
			}
			if prev, dup := ignored[id]; dup {
				return nil, fmt.Errorf("ignore list %s: %s is listed under both %s and %s", path, id, prev.group, group)
			}
			ignored[id] = ignoreEntry{group: group, reason: reason}
		}
	}
	return ignored, nil
}

package crs

import "testing"

// TestIgnoreListNamesSuiteTests checks the ignore list without Envoy, so a
// typo in it fails `make unit` too, not only the end-to-end run.
func TestIgnoreListNamesSuiteTests(t *testing.T) {
	suite, err := loadSuite()
	if err != nil {
		t.Fatal(err)
	}
	ignored, err := loadIgnored(ignoreListPath)
	if err != nil {
		t.Fatal(err)
	}
	inSuite := map[string]bool{}
	for _, unit := range suite {
		inSuite[unit.Tests[0].IdString()] = true
	}
	if len(inSuite) < 4000 {
		t.Errorf("the embedded suite has %d test cases; CRS v4.25.0 has 4,674", len(inSuite))
	}
	for id, entry := range ignored {
		if !inSuite[id] {
			t.Errorf("%s lists %s (%s), which is not a test of the CRS suite", ignoreListPath, id, entry.group)
		}
	}
}

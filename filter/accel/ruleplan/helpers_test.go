package ruleplan

import (
	"io/fs"
	"testing"
	"testing/fstest"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"

	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// ruleSet reads and parses text as the accelerator does; a nil root has
// no files.
func ruleSet(t *testing.T, root fs.FS, text string) *seclang.RuleSet {
	t.Helper()
	if root == nil {
		root = fstest.MapFS{}
	}
	ds, err := seclang.Read(root, text)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := seclang.Parse(ds)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// crsRuleSet is CRS v4 as coraza-coreruleset ships it, with its
// recommended engine settings and setup, and extra after the setup.
func crsRuleSet(t *testing.T, extra string) *seclang.RuleSet {
	t.Helper()
	return ruleSet(t, coreruleset.FS, "Include @coraza.conf-recommended\nInclude @crs-setup.conf.example\n"+extra+"\nInclude @owasp_crs/*.conf")
}

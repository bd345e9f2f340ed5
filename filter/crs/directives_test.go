package crs

import (
	"encoding/json"
	"testing"
)

// markerHeader is the request header go-ftw brackets every test with; the
// marker rule below writes its value to the log (config.DefaultLogMarkerHeaderName).
const markerHeader = "X-CRS-Test"

// crsTestDirectives is the rule set the CRS regression suite is written
// for, in the order it must load:
//
//  1. Coraza's recommended configuration;
//  2. the CRS test settings: default actions that log in the response
//     phases; rule 900005 from the CRS regression README, which switches
//     the transaction to DetectionOnly (the tests assert on logged rule
//     ids, not on blocking), removes 910000 and sets paranoia level 4 with
//     the suite's argument and file limits; and the marker rule, which
//     logs X-CRS-Test's value so go-ftw can find where each test's log
//     lines start and end, and removes every other rule from marker
//     requests so they add nothing between the markers;
//  3. the CRS set-up and the CRS rules, which read the settings above.
var crsTestDirectives = []string{
	"Include @coraza.conf-recommended",
	// The recommended file turns the audit engine on (RelevantOnly) with no
	// log file: every transaction would build a record just to drop it.
	"SecAuditEngine Off",
	// The reflector answers text/plain, so response bodies are inspected.
	"SecResponseBodyMimeType text/plain",
	// crs-setup gives default actions for phases 1 and 2 only. ModSecurity,
	// which the suite is written against, logs rules of the other phases
	// by default; Coraza does not, so without these the response rules
	// (RESPONSE-95x, e.g. 951110: "block" without "log") and the phase-5
	// reporting rule 980170 match silently and go-ftw never sees their ids.
	`SecDefaultAction "phase:3,log,auditlog,pass"`,
	`SecDefaultAction "phase:4,log,auditlog,pass"`,
	`SecDefaultAction "phase:5,log,auditlog,pass"`,
	`SecAction "id:900005,phase:1,nolog,pass,` +
		`ctl:ruleEngine=DetectionOnly,ctl:ruleRemoveById=910000,` +
		`setvar:tx.blocking_paranoia_level=4,setvar:tx.crs_validate_utf8_encoding=1,` +
		`setvar:tx.arg_name_length=100,setvar:tx.arg_length=400,setvar:tx.total_arg_length=64000,` +
		`setvar:tx.max_num_args=255,setvar:tx.max_file_size=64100,setvar:tx.combined_file_sizes=65535"`,
	`SecRule REQUEST_HEADERS:` + markerHeader + ` "@rx ^.*$" "id:999999,phase:1,pass,t:none,log,` +
		`msg:'` + markerHeader + ` %{MATCHED_VAR}',ctl:ruleRemoveById=1-999998"`,
	"Include @crs-setup.conf.example",
	"Include @owasp_crs/*.conf",
}

// filterConfig is the corazawaf filter_config JSON for crsTestDirectives.
func filterConfig(t testing.TB) string {
	t.Helper()
	return filterConfigWith(t, "")
}

// filterConfigWith sets the acceleration mode as well ("" leaves the
// module's default).
func filterConfigWith(t testing.TB, acceleration string) string {
	t.Helper()
	cfg := map[string]any{"directives": crsTestDirectives}
	if acceleration != "" {
		cfg["acceleration"] = acceleration
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("encoding the filter config: %v", err)
	}
	return string(b)
}

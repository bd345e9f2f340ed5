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
//  2. the CRS test settings. Rule 900005 is the one the CRS regression
//     README asks for: it switches the transaction to DetectionOnly (the
//     tests assert on logged rule ids, not on blocking), removes 910000
//     and raises the paranoia level to 4 with the test suite's argument
//     and file limits. The marker rule logs X-CRS-Test's value so go-ftw
//     can find where each test's log lines start and end, and removes
//     every other rule from marker requests so they add nothing to the
//     window between the markers;
//  3. the CRS set-up and the CRS rules, which read the settings above.
var crsTestDirectives = []string{
	"Include @coraza.conf-recommended",
	// The recommended file turns the audit engine on (RelevantOnly) with no
	// log file: every transaction would build a record just to drop it.
	"SecAuditEngine Off",
	// The reflector answers text/plain, so response bodies are inspected.
	"SecResponseBodyMimeType text/plain",
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
	b, err := json.Marshal(map[string][]string{"directives": crsTestDirectives})
	if err != nil {
		t.Fatalf("encoding the filter config: %v", err)
	}
	return string(b)
}

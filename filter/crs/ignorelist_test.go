package crs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestIgnoreListNamesSuiteTests checks the ignore list without Envoy, so a
// typo in it fails `make unit` too, not only the end-to-end run: every id
// is a test of the suite, every envoy entry has a proof (loadIgnored
// refuses one without), and a header a proof says Envoy strips is one the
// test sends.
func TestIgnoreListNamesSuiteTests(t *testing.T) {
	suite, ignored := suiteAndIgnoreList(t)
	inSuite := map[string]bool{}
	sends := map[string][]string{} // test id -> header names its stages send, lower case
	raw := map[string]bool{}       // test id -> a stage is an encoded_request
	for _, unit := range suite {
		id := unit.Tests[0].IdString()
		inSuite[id] = true
		for _, stage := range unit.Tests[0].Stages {
			if stage.Input.EncodedRequest != "" {
				raw[id] = true
			}
			for _, h := range stage.Input.OrderedHeaders {
				sends[id] = append(sends[id], strings.ToLower(h.Name))
			}
		}
	}
	if len(inSuite) < 4000 {
		t.Errorf("the embedded suite has %d test cases; CRS v4.25.0 has 4,674", len(inSuite))
	}
	classes := map[string]int{}
	for id, entry := range ignored {
		if !inSuite[id] {
			t.Errorf("%s lists %s (%s), which is not a test of the CRS suite", ignoreListPath, id, entry.group)
		}
		if entry.proof == nil {
			continue
		}
		classes[entry.proof.class]++
		for _, name := range entry.proof.stripped {
			switch {
			case raw[id]:
				t.Errorf("%s: %s: stripped %s, but the test sends a raw request (say it with upstream_lacks)", ignoreListPath, id, name)
			case !slices.Contains(sends[id], strings.ToLower(name)):
				t.Errorf("%s: %s: stripped %s, but the test sends no %s", ignoreListPath, id, name, name)
			}
		}
	}
	t.Logf("envoy ignores by proof: %v", classes)
}

// TestParseIgnored covers the list's format: a bare reason, or (envoy
// entries, which must have one) a mapping with the reason and a proof that
// fits its class.
func TestParseIgnored(t *testing.T) {
	tests := []struct {
		name, yaml string
		wantErr    string // "" for a valid list
		check      func(ignoreEntry) error
	}{
		{name: "coraza entry is a bare reason", yaml: "coraza:\n  920270-4: Apache answers 400.\n",
			check: func(e ignoreEntry) error {
				if e.group != "coraza" || e.reason != "Apache answers 400." || e.proof != nil {
					return fmt.Errorf("got %+v", e)
				}
				return nil
			}},
		{name: "coraza entry as a mapping with only a reason", yaml: "coraza:\n  920270-4:\n    reason: Apache answers 400.\n"},
		{name: "rejected-by-envoy", yaml: "envoy:\n  911100-5:\n    reason: unknown method\n    proof: rejected-by-envoy\n    answer: 400 http1.codec_error\n",
			check: func(e ignoreEntry) error {
				if p := e.proof; p == nil || p.class != proofRejected || p.status != 400 || p.details != "http1.codec_error" {
					return fmt.Errorf("got proof %+v", e.proof)
				}
				return nil
			}},
		{name: "blocked-after-normalisation", yaml: "envoy:\n  920100-4:\n    reason: r\n    proof: blocked-after-normalisation\n    answer: 403 corazawaf_denied_rule_949110\n"},
		{name: "passed-harmless", yaml: "envoy:\n  932161-7:\n    reason: r\n    proof: passed-harmless\n    answer: 200 via_upstream\n    harmless: no Referer arrives\n    stripped: [Referer]\n    upstream_has: ['^GET ']\n",
			check: func(e ignoreEntry) error {
				p := e.proof
				if p == nil || p.explain != "no Referer arrives" || len(p.stripped) != 1 || len(p.upstreamHas) != 1 || !p.upstreamHas[0].MatchString("GET /") {
					return fmt.Errorf("got proof %+v", p)
				}
				return nil
			}},
		{name: "known-gap", yaml: "envoy:\n  920171-2:\n    reason: r\n    proof: known-gap\n    answer: 200 via_upstream\n    gap: it arrives\n    upstream_has: ['(?i)transfer-encoding']\n"},
		{name: "envoy entry without a proof", yaml: "envoy:\n  911100-5: unknown method\n", wantErr: `proof ""`},
		{name: "unknown proof class", yaml: "envoy:\n  911100-5:\n    reason: r\n    proof: harmless\n    answer: 400 x\n", wantErr: `proof "harmless"`},
		{name: "misspelt key", yaml: "envoy:\n  911100-5:\n    reason: r\n    proof: rejected-by-envoy\n    answr: 400 x\n", wantErr: `unknown key "answr"`},
		{name: "answer without details", yaml: "envoy:\n  911100-5:\n    reason: r\n    proof: rejected-by-envoy\n    answer: \"400\"\n", wantErr: `answer "400"`},
		{name: "no reason", yaml: "envoy:\n  911100-5:\n    proof: rejected-by-envoy\n    answer: 400 x\n", wantErr: "no reason"},
		{name: "a rejection that is the WAF's", yaml: "envoy:\n  911100-5:\n    reason: r\n    proof: rejected-by-envoy\n    answer: 403 corazawaf_denied_rule_949110\n", wantErr: "not an Envoy rejection"},
		{name: "a rejection from the backend", yaml: "envoy:\n  911100-5:\n    reason: r\n    proof: rejected-by-envoy\n    answer: 400 via_upstream\n", wantErr: "not an Envoy rejection"},
		{name: "a block that is not the WAF's", yaml: "envoy:\n  911100-5:\n    reason: r\n    proof: blocked-after-normalisation\n    answer: 403 upgrade_failed\n", wantErr: "not the WAF's 403"},
		{name: "harmless without a check", yaml: "envoy:\n  932161-7:\n    reason: r\n    proof: passed-harmless\n    answer: 200 via_upstream\n    harmless: h\n", wantErr: "no upstream check"},
		{name: "harmless without saying why", yaml: "envoy:\n  932161-7:\n    reason: r\n    proof: passed-harmless\n    answer: 200 via_upstream\n    stripped: [Referer]\n", wantErr: "no harmless"},
		{name: "harmless answered by Envoy", yaml: "envoy:\n  932161-7:\n    reason: r\n    proof: passed-harmless\n    answer: 400 http1.codec_error\n    harmless: h\n    stripped: [Referer]\n", wantErr: "does not come from the backend"},
		{name: "known gap without saying what", yaml: "envoy:\n  920171-2:\n    reason: r\n    proof: known-gap\n    answer: 200 via_upstream\n    upstream_has: [x]\n", wantErr: "no gap"},
		{name: "gap text on a harmless entry", yaml: "envoy:\n  932161-7:\n    reason: r\n    proof: passed-harmless\n    answer: 200 via_upstream\n    harmless: h\n    gap: g\n    stripped: [Referer]\n", wantErr: "harmless is for"},
		{name: "upstream checks on a rejection", yaml: "envoy:\n  911100-5:\n    reason: r\n    proof: rejected-by-envoy\n    answer: 400 x\n    upstream_lacks: [y]\n", wantErr: "nothing reaches the backend"},
		{name: "bad regular expression", yaml: "envoy:\n  932161-7:\n    reason: r\n    proof: passed-harmless\n    answer: 200 via_upstream\n    harmless: h\n    upstream_lacks: ['(']\n", wantErr: "upstream_lacks"},
		{name: "proof on a coraza entry", yaml: "coraza:\n  920270-4:\n    reason: r\n    proof: rejected-by-envoy\n", wantErr: "only envoy entries"},
		{name: "unknown section", yaml: "nginx:\n  920270-4: r\n", wantErr: `unknown section "nginx"`},
		{name: "not a test id", yaml: "coraza:\n  \"920270\": r\n", wantErr: "not a test id"},
		{name: "listed twice", yaml: "coraza:\n  920270-4: r\nmodule:\n  920270-4: r\n", wantErr: "listed under both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseIgnored([]byte(tc.yaml))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("no error, want one containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want one containing %q", err, tc.wantErr)
			}
			if tc.check == nil {
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d entries, want 1", len(got))
			}
			for _, e := range got {
				if err := tc.check(e); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

package waf

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/filter/accel"
	"github.com/wafsweep/wafsweep/filter/accel/seclang"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

// The differential verdict test: stock and accelerated engines, same
// rule set, a generated corpus of CRS payloads mutated the ways attackers
// evade filters; every request must come to the same verdict and the same
// matched rule ids. The short form runs in plain go test; the long form:
//
//	go test -tags corazawaf_accelerated -run TestAcceleratedVerdictsMatchStock \
//	    ./filter/waf/ -args -accel.verdict-requests=100000
var (
	verdictRequests = flag.Int("accel.verdict-requests", 2000, "requests the differential verdict test generates per rule set")
	verdictSeed     = flag.Uint64("accel.verdict-seed", 1, "seed of the differential verdict test's corpus")
	verdictTiers    = flag.String("accel.verdict-tiers", "full-crs,full-crs-pl4", "rule sets the differential verdict test compares (comma-separated)")
)

// corpusRequest is one generated request.
type corpusRequest struct {
	name string
	req  RequestHead
	body []byte
}

// placement puts a value somewhere in a request.
type placement struct {
	name string
	make func(rng *rand.Rand, v string) (RequestHead, []byte)
}

var placements = []placement{
	{"query", func(_ *rand.Rand, v string) (RequestHead, []byte) { return get("/search?q=" + url.QueryEscape(v)), nil }},
	{"raw-query", func(_ *rand.Rand, v string) (RequestHead, []byte) { return get("/search?q=" + rawURI(v)), nil }},
	{"arg-name", func(_ *rand.Rand, v string) (RequestHead, []byte) {
		return get("/search?" + url.QueryEscape(v) + "=1"), nil
	}},
	{"split-args", func(rng *rand.Rand, v string) (RequestHead, []byte) { return get("/search?" + splitArgs(rng, v)), nil }},
	{"path", func(_ *rand.Rand, v string) (RequestHead, []byte) { return get("/files/" + url.PathEscape(v)), nil }},
	{"user-agent", func(_ *rand.Rand, v string) (RequestHead, []byte) { return withHeader(get("/"), "user-agent", v), nil }},
	{"referer", func(_ *rand.Rand, v string) (RequestHead, []byte) { return withHeader(get("/"), "referer", v), nil }},
	{"custom-header", func(_ *rand.Rand, v string) (RequestHead, []byte) { return withHeader(get("/"), "x-note", v), nil }},
	{"cookie", func(_ *rand.Rand, v string) (RequestHead, []byte) {
		return withHeader(get("/"), "cookie", "session=abc; note="+headerSafe(v)), nil
	}},
	{"form", func(rng *rand.Rand, v string) (RequestHead, []byte) {
		body := []byte("id=7&" + splitArgs(rng, v))
		return post("/submit", "application/x-www-form-urlencoded", len(body)), body
	}},
	{"json", func(_ *rand.Rand, v string) (RequestHead, []byte) {
		body, _ := json.Marshal(map[string]any{"id": 7, "note": v, "tags": []string{v}})
		return post("/api", "application/json", len(body)), body
	}},
	{"xml", func(_ *rand.Rand, v string) (RequestHead, []byte) {
		var b strings.Builder
		b.WriteString("<order><note>")
		_ = xml.EscapeText(&b, []byte(v))
		b.WriteString("</note></order>")
		return post("/api", "text/xml", b.Len()), []byte(b.String())
	}},
	{"multipart", func(_ *rand.Rand, v string) (RequestHead, []byte) {
		body := []byte("--b0undary\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\n" + v + "\r\n--b0undary--\r\n")
		return post("/upload", "multipart/form-data; boundary=b0undary", len(body)), body
	}},
}

// rawURI keeps what may stand in a request line, escaping the rest, so
// that the payload's own encodings reach Coraza's query parser.
func rawURI(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == '#' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// splitArgs spreads v over up to three arguments.
func splitArgs(rng *rand.Rand, v string) string {
	parts := []string{v}
	if len(v) > 2 {
		a := 1 + rng.IntN(len(v)-1)
		parts = []string{v[:a], v[a:]}
	}
	var args []string
	for i, p := range parts {
		args = append(args, fmt.Sprintf("p%d=%s", i, url.QueryEscape(p)))
	}
	return strings.Join(args, "&")
}

// headerSafe drops what cannot stand in a header value.
func headerSafe(v string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, v)
}

func withHeader(r RequestHead, name, value string) RequestHead {
	r.Headers = append(r.Headers, Header{name, headerSafe(value)})
	return r
}

// verdictCorpus makes n requests: a CRS payload (or an adversarial value),
// mutated, in one of the placements.
func verdictCorpus(t *testing.T, rng *rand.Rand, n int) []corpusRequest {
	t.Helper()
	payloads, err := crscorpus.Strings(5000, 400)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]corpusRequest, 0, n)
	for i := range n {
		v := payloads[rng.IntN(len(payloads))]
		switch rng.IntN(5) {
		case 0: // the payload as the suite has it
		case 1:
			v = crscorpus.Adversarial(rng, payloads)
		default:
			v = crscorpus.Mutate(rng, v)
		}
		p := placements[rng.IntN(len(placements))]
		req, body := p.make(rng, v)
		out = append(out, corpusRequest{fmt.Sprintf("request %d (%s, %q)", i, p.name, v), req, body})
	}
	return out
}

// verdict is what a request came to.
type verdict struct {
	blockedBy int // 0 when not interrupted
	status    int
	matched   []int
}

func (v verdict) String() string {
	return fmt.Sprintf("blocked by %d (status %d), matched %v", v.blockedBy, v.status, v.matched)
}

// judge drives one request; its matched rules are listed as visibleIDs
// lists them for an engine that dropped what as dropped.
func judge(t testing.TB, e *Engine, r corpusRequest, as *accel.Accelerator) verdict {
	t.Helper()
	tx := e.newTransaction()
	drive(tx, r.req, r.body)
	var v verdict
	if it := tx.Interruption(); it != nil {
		v.blockedBy, v.status = it.RuleID, it.Status
	}
	tx.ProcessLogging()
	e.finishTransaction(tx)
	v.matched = visibleIDs(t, tx.MatchedRules(), as)
	_ = tx.Close()
	return v
}

// without lists the ids of a that b lacks.
func without(a, b []int) []int {
	var out []int
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

func (v verdict) equal(w verdict) bool {
	return v.blockedBy == w.blockedBy && v.status == w.status && slices.Equal(v.matched, w.matched)
}

// TestAcceleratedVerdictsMatchStock runs the corpus through the full CRS
// blocking at paranoia level 1 and, detection only, at level 4 (where
// every candidate is in force and every rule runs).
func TestAcceleratedVerdictsMatchStock(t *testing.T) {
	n := *verdictRequests
	if testing.Short() {
		n /= 10
	}
	corpus := verdictCorpus(t, rand.New(rand.NewPCG(*verdictSeed, 0)), n)
	for _, rs := range []struct{ tier, extra string }{
		{"full-crs", ""},
		{"full-crs-pl4", "SecRuleEngine DetectionOnly"},
	} {
		if !slices.Contains(strings.Split(*verdictTiers, ","), rs.tier) {
			continue
		}
		t.Run(rs.tier, func(t *testing.T) {
			var extra []string
			if rs.extra != "" {
				extra = append(extra, rs.extra)
			}
			stock := accelEngine(t, rs.tier, "off", nil, extra...)
			fast := accelEngine(t, rs.tier, "prefilter", nil, extra...)
			shadow := accelEngine(t, rs.tier, "shadow", nil, extra...)
			lastCapture := lastCaptureRules(t, rs.tier)
			differ, blocked, byOrder := 0, 0, 0
			for _, r := range corpus {
				want, got := judge(t, stock, r, fast.Accelerator()), judge(t, fast, r, nil)
				if want.blockedBy != 0 {
					blocked++
				}
				if got.equal(want) {
					continue
				}
				only := append(without(got.matched, want.matched), without(want.matched, got.matched)...)
				if _, contradictions := matchedIDs(t, shadow, r.req, r.body, nil); contradictions == 0 && allIn(only, lastCapture) {
					byOrder++
					if byOrder <= 10 {
						t.Logf("%s: differs on %v only, rules that read the last value's capture; the accelerator removed nothing that matches (shadow)", r.name, only)
					}
					continue
				}
				differ++
				if differ <= 10 {
					t.Errorf("%s: accelerated blocked by %d, stock by %d; only accelerated matched %v, only stock %v",
						r.name, got.blockedBy, want.blockedBy, without(got.matched, want.matched), without(want.matched, got.matched))
				}
			}
			st := fast.Accelerator().Stats()
			t.Logf("%d requests (%d blocked by stock), %d differ, %d on last-capture rules in Coraza's value order; %d candidate decisions removed, %d kept",
				len(corpus), blocked, differ, byOrder, st.Removed, st.Kept)
			if st.Removed == 0 {
				t.Error("nothing was removed: the accelerator did not work")
			}
		})
	}
}

// lastCaptureRules lists the rules of a tier whose chain reads the
// capture (TX:0-9) of the parent's match. With several matching values the
// chain reads the last one's, and which value is last is the order of a Go
// map, new on every call: such a rule can come to either verdict on the
// same request, in either engine (CRS 942130, 942131 and 942521 at
// paranoia level 2 and above). A difference on these rules alone, in a
// request on which shadow mode finds no removed candidate matching, is
// Coraza's order, not the accelerator.
func lastCaptureRules(t *testing.T, tier string) map[int]bool {
	t.Helper()
	directives, err := seclang.Read(NewRulesFS(), "Include "+rulesetPath(t, tier))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := seclang.Parse(directives)
	if err != nil {
		t.Fatal(err)
	}
	readsCapture := regexp.MustCompile(`(?i)\bTX[:.][0-9]\b`)
	out := map[int]bool{}
	for _, r := range rs.Rules {
		if !r.HasAction("capture") {
			continue
		}
		for _, c := range r.Chain {
			if readsCapture.MatchString(c.Targets) || (c.Operator != nil && readsCapture.MatchString(c.Operator.Argument)) {
				out[r.ID] = true
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rule reads a capture in its chain; the analysis is broken", tier)
	}
	return out
}

func allIn(ids []int, set map[int]bool) bool {
	for _, id := range ids {
		if !set[id] {
			return false
		}
	}
	return len(ids) > 0
}

// TestAcceleratedBlocksTheLengthPreservingEntityBypass is the request
// that went through the accelerated module in Envoy: its htmlEntityDecode
// keeps the length, which Coraza reports as no change.
func TestAcceleratedBlocksTheLengthPreservingEntityBypass(t *testing.T) {
	r := corpusRequest{"bypass", get("/search?q=" + url.QueryEscape(crscorpus.Bypass)), nil}
	fast := accelEngine(t, "full-crs", "prefilter", nil)
	want := judge(t, accelEngine(t, "full-crs", "off", nil), r, fast.Accelerator())
	got := judge(t, fast, r, nil)
	if want.blockedBy == 0 {
		t.Fatalf("stock does not block the bypass any more: %s", want)
	}
	if !got.equal(want) {
		t.Errorf("accelerated %s; stock %s", got, want)
	}
}

package waf

import (
	"encoding/json"
	"fmt"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"

	"github.com/wafsweep/wafsweep/filter/accel"
	"github.com/wafsweep/wafsweep/filter/accel/ruleplan"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

func accelEngine(t testing.TB, tier, mode string, log Logger, extra ...string) *Engine {
	t.Helper()
	cfg := tierConfig(t, tier, extra...)
	cfg.Acceleration = mode
	e, err := NewEngine(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// matchedIDs drives one request and returns the ids of the rules that
// matched, sorted, as visibleIDs sees them, and the shadow disagreements.
func matchedIDs(t testing.TB, e *Engine, req RequestHead, body []byte, as *accel.Accelerator) ([]int, int) {
	ids, _, disagreements := inspect(t, e, req, body, plainResponse, as)
	return ids, disagreements
}

// inspect drives one request and returns what matchedIDs does, and the
// TX collection as phase 5 left it, "key=value" sorted.
func inspect(t testing.TB, e *Engine, req RequestHead, body []byte, resp response, as *accel.Accelerator) (ids []int, txVars []string, disagreements int) {
	tx := e.newTransaction()
	driveWith(tx, req, body, resp)
	tx.ProcessLogging()
	disagreements = e.finishTransaction(tx)
	ids = visibleIDs(t, tx.MatchedRules(), as)
	if state, ok := tx.(plugintypes.TransactionState); ok {
		for _, m := range state.Variables().TX().FindAll() {
			// TX:0-9 hold a capturing rule's match, taken from the
			// request headers in map order: they differ from run to run
			// in stock Coraza too.
			if _, err := strconv.Atoi(m.Key()); err != nil {
				txVars = append(txVars, m.Key()+"="+m.Value())
			}
		}
	}
	slices.Sort(txVars)
	tx.Close()
	return ids, txVars, disagreements
}

// visibleIDs returns the ids of the matched rules, sorted, as an engine
// that dropped the rules acc dropped (ruleplan.Constant) would list them;
// acc nil takes them all. A dropped rule that only skips is nolog and
// noauditlog, so it leaves no trace but in Coraza's own list, and is left
// out; a rule dropped because it never matches or is never reached must
// not have matched at all.
func visibleIDs(t testing.TB, matched []types.MatchedRule, acc *accel.Accelerator) []int {
	t.Helper()
	dropped := map[int]ruleplan.DropKind{}
	if acc != nil {
		for _, d := range acc.Dropped() {
			dropped[d.ID] = d.Kind
		}
	}
	var ids []int
	for _, m := range matched {
		id := m.Rule().ID()
		kind, ok := dropped[id]
		if !ok {
			ids = append(ids, id)
			continue
		}
		quiet, isQuiet := m.(interface {
			Log() bool
			Audit() bool
		})
		switch {
		case !kind.Quiet():
			t.Errorf("rule %d matched, but was dropped as %s", id, kind)
		case !isQuiet || quiet.Log() || quiet.Audit():
			t.Errorf("rule %d was dropped as %s, but its match is logged or audited", id, kind)
		}
	}
	slices.Sort(ids)
	return ids
}

// accelCorpus is benign traffic (the sweep's shapes) and attacks (every
// string of the CRS regression suite, as a query argument and as a JSON
// value).
func accelCorpus(t *testing.T, n int) []struct {
	name string
	req  RequestHead
	body []byte
} {
	t.Helper()
	var out []struct {
		name string
		req  RequestHead
		body []byte
	}
	for _, name := range []string{plan.ShapeGet, plan.ShapeJSON1K} {
		shape, err := plan.ShapeByName(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, struct {
			name string
			req  RequestHead
			body []byte
		}{name, shapeRequest(shape), shape.Body})
	}
	strs, err := crscorpus.Strings(n, 400)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range strs {
		req := get("/search?q=" + url.QueryEscape(s))
		out = append(out, struct {
			name string
			req  RequestHead
			body []byte
		}{fmt.Sprintf("query %d", i), req, nil})
		body := fmt.Appendf(nil, `{"note": %q, "id": 7}`, s)
		jreq := post("/api", "application/json", len(body))
		out = append(out, struct {
			name string
			req  RequestHead
			body []byte
		}{fmt.Sprintf("json %d", i), jreq, body})
	}
	return out
}

// TestAcceleratedMatchesStock compares the rules that match, request by
// request, between stock and accelerated engines at paranoia levels 1 and
// 4, and requires shadow mode to find no disagreement.
func TestAcceleratedMatchesStock(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 25
	}
	corpus := accelCorpus(t, n)
	for _, tier := range []string{"full-crs", "full-crs-pl4"} {
		t.Run(tier, func(t *testing.T) {
			// Detection only, so that every rule of every phase runs.
			extra := "SecRuleEngine DetectionOnly"
			stock := accelEngine(t, tier, "off", nil, extra)
			fast := accelEngine(t, tier, "prefilter", nil, extra)
			shadowLog := &recordingLogger{}
			shadow := accelEngine(t, tier, "shadow", shadowLog, extra)
			differ := 0
			for _, c := range corpus {
				want, _ := matchedIDs(t, stock, c.req, c.body, fast.Accelerator())
				got, _ := matchedIDs(t, fast, c.req, c.body, nil)
				if !slices.Equal(got, want) {
					differ++
					if differ <= 10 {
						t.Errorf("%s: accelerated matched %v, stock %v", c.name, got, want)
					}
				}
				if _, d := matchedIDs(t, shadow, c.req, c.body, nil); d != 0 {
					t.Errorf("%s: %d shadow disagreements", c.name, d)
				}
			}
			st := fast.Accelerator().Stats()
			t.Logf("%d requests, %d differ; removed %d, kept %d candidate decisions", len(corpus), differ, st.Removed, st.Kept)
			if st.Removed == 0 {
				t.Error("nothing was removed: the accelerator did not work")
			}
			if shadowLog.contains("disagreement") {
				t.Error("shadow mode logged a disagreement")
			}
		})
	}
}

// TestAcceleratedMatchesStockWhereRulesWereLeftOut drives the transactions
// the load-time drops and the markers left out are about: no Host header
// (920280 skips to a marker that stays), compressed and failed responses
// (950010 and its kind skip to markers that went, over rules that went;
// 954130 reads a 404), and attacks, which run phase 5's reporting skips.
// Besides the rules that match, the TX collection must end the same: the
// folded initialization sets what the rules it replaces set.
func TestAcceleratedMatchesStockWhereRulesWereLeftOut(t *testing.T) {
	noHost := get("/index.html")
	noHost.Authority = ""
	requests := map[string]RequestHead{
		"benign":         get("/index.html"),
		"no Host":        noHost,
		"attack":         get("/search?q=" + url.QueryEscape("' UNION SELECT password FROM users --")),
		"attack no Host": func() RequestHead { r := get("/?x=<script>alert(1)</script>"); r.Authority = ""; return r }(),
	}
	responses := map[string]response{
		"plain":        plainResponse,
		"gzip":         {200, []Header{{"content-type", "text/html"}, {"content-encoding", "gzip"}}},
		"br and 404":   {404, []Header{{"content-type", "text/html"}, {"content-encoding", "br"}}},
		"server error": {500, []Header{{"content-type", "text/html"}}},
		"not found":    {404, []Header{{"content-type", "text/html"}}},
	}
	for _, tier := range []string{"full-crs", "full-crs-pl4"} {
		for _, engine := range []string{"On", "DetectionOnly"} {
			extra := "SecRuleEngine " + engine
			stock := accelEngine(t, tier, "off", nil, extra)
			fast := accelEngine(t, tier, "prefilter", nil, extra)
			if tier == "full-crs" && fast.Accelerator().MarkersLeftOut() == 0 {
				t.Errorf("%s: no marker was left out", tier)
			}
			for reqName, req := range requests {
				for respName, resp := range responses {
					want, wantTX, _ := inspect(t, stock, req, nil, resp, fast.Accelerator())
					got, gotTX, _ := inspect(t, fast, req, nil, resp, nil)
					if !slices.Equal(got, want) {
						t.Errorf("%s, %s, %s, %s: accelerated matched %v, stock %v", tier, engine, reqName, respName, got, want)
					}
					if len(wantTX) == 0 || !slices.Equal(gotTX, wantTX) {
						t.Errorf("%s, %s, %s, %s: accelerated left TX\n%q\nstock\n%q", tier, engine, reqName, respName, gotTX, wantTX)
					}
				}
			}
		}
	}
}

func TestAccelerationConfig(t *testing.T) {
	for _, tt := range []struct {
		json, wantErr string
	}{
		{`{"acceleration": "prefilter"}`, ""},
		{`{"acceleration": "shadow"}`, ""},
		{`{"acceleration": "off"}`, ""},
		{`{"acceleration": "turbo"}`, `acceleration "turbo"`},
	} {
		_, err := ParseConfig([]byte(tt.json))
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: error %v, want %q", tt.json, err, tt.wantErr)
		}
	}
	cfg, err := ParseConfig([]byte(`{}`))
	if err != nil || cfg.Acceleration != defaultAcceleration {
		t.Errorf("default acceleration %q (%v), want %q", cfg.Acceleration, err, defaultAcceleration)
	}
}

// TestAcceleratedStreamBlocksLikeStock goes through the filter's glue.
func TestAcceleratedStreamBlocksLikeStock(t *testing.T) {
	log := &recordingLogger{}
	cfg := tierConfig(t, "full-crs")
	cfg.Acceleration = "prefilter"
	e, err := NewEngine(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if !log.contains("acceleration prefilter:") {
		t.Errorf("no acceleration summary in the log: %q", log.lines)
	}
	body := []byte(`{"q": "1 UNION SELECT password FROM users--"}`)
	s := NewStream(&cfg, e, log)
	s.OnRequestHeaders(post("/api", "application/json", len(body)))
	d := s.OnRequestBody([][]byte{body}, true)
	if d.Action != Reply || d.Reply.Status != 403 {
		t.Fatalf("SQL injection not blocked: %+v", d)
	}
	if o := s.Complete(); o.AccelDisagreements != 0 {
		t.Errorf("disagreements in prefilter mode: %d", o.AccelDisagreements)
	}
}

// A stream broken off between a phase's collectors and its decider (Release,
// after a panic) must not leave the accelerator's state to the next user of
// Coraza's pooled transaction.
func TestReleaseDropsTheAcceleratorsState(t *testing.T) {
	cfg := tierConfig(t, "full-crs")
	cfg.Acceleration = "prefilter"
	e, err := NewEngine(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStream(&cfg, e, nil)
	s.OnRequestHeaders(post("/api", "application/json", 100)) // the body is to come
	// What a phase-2 collector does before its decider runs.
	e.Accelerator().Collect(s.tx.(plugintypes.TransactionState), 0, "value")
	if n := e.Accelerator().Tracked(); n != 1 {
		t.Fatalf("%d transactions tracked mid-phase, want 1", n)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if n := e.Accelerator().Tracked(); n != 0 {
		t.Errorf("%d transactions tracked after Release, want 0", n)
	}
}

// TestPerRouteRuleSetsAreAccelerated builds a route's own full CRS with
// and without acceleration: the accelerated one has an accelerator, and
// both block an injection with the same rule and pass a benign request.
func TestPerRouteRuleSetsAreAccelerated(t *testing.T) {
	directives, err := json.Marshal([]string{"Include " + rulesetPath(t, "full-crs")})
	if err != nil {
		t.Fatal(err)
	}
	listener := tierConfig(t, "targeted")
	verdicts := map[string][2]int{}
	for _, mode := range []string{"", "off", "prefilter"} {
		js := `{"directives":` + string(directives)
		if mode != "" {
			js += `,"acceleration":"` + mode + `"`
		}
		rc, err := ParseRouteConfig([]byte(js + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if mode == "" && rc.Acceleration != defaultAcceleration {
			t.Errorf("route acceleration defaults to %q, want the build's %q", rc.Acceleration, defaultAcceleration)
		}
		route, err := NewRoute(rc, nil)
		if err != nil {
			t.Fatal(err)
		}
		e, err := route.Engine(nil)
		if err != nil {
			t.Fatal(err)
		}
		if accelerated := e.Accelerator() != nil; accelerated != (rc.Acceleration == "prefilter") {
			t.Errorf("acceleration %q: accelerator present %v", rc.Acceleration, accelerated)
		}
		attack, _, _ := run(t, listener, e, get("/search?q=1%27%20union%20select%20password%20from%20users--"), nil, 0)
		benign, _, _ := run(t, listener, e, get("/api/orders?page=2"), nil, 0)
		verdicts[rc.Acceleration] = [2]int{attack.Reply.Verdict.RuleID, int(benign.Action)}
		route.Close()
	}
	if verdicts["off"] != verdicts["prefilter"] || verdicts["off"][0] == 0 || Action(verdicts["off"][1]) != Continue {
		t.Errorf("verdicts (attack rule, benign action) by acceleration: %v", verdicts)
	}
}

// Coraza keeps, per transaction, a cache of every transformed argument of
// the rules that ran, in a map that never shrinks and stays with the
// transaction in Coraza's pool: 5 MB after one 50 KB JSON body when the
// phase-2 @pm, @pmFromFile, @detectXSS and @validateByteRange rules of CRS
// ran on every argument. Deciding those rules in the accelerator keeps
// them, and their cache entries, out of benign transactions.
func TestLargeBodiesLeaveLittleInPooledTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("inspects sixteen 50 KB bodies under the full CRS")
	}
	e := accelEngine(t, "full-crs", "prefilter", nil)
	cfg := tierConfig(t, "full-crs")
	shape, err := plan.ShapeByName("json_50k")
	if err != nil {
		t.Fatal(err)
	}
	before := liveHeap()
	streams := make([]*Stream, 16) // all open at once, as under load
	for i := range streams {
		streams[i] = NewStream(&cfg, e, nil)
		if d := sendRequest(streams[i], shapeRequest(shape), shape.Body, benchFrame); d.Action == Reply {
			t.Fatalf("benign json_50k blocked by rule %d", d.Reply.Verdict.RuleID)
		}
	}
	for _, s := range streams {
		s.OnResponseHeaders(200, []Header{{"content-type", "text/plain"}}, true)
		s.Complete()
	}
	// One collection: Coraza's pool keeps the closed transactions.
	// 83 MB before the operators were decided, 3-5 once they were; 323
	// while candidates without multiMatch had collectors of exactly their
	// chain, without multiMatch, which fill Coraza's transformation cache
	// as the candidates would. The collectors run with multiMatch again,
	// which skips the cache (the transformations that misreport changes
	// have honest twins): 2-3 MB measured, twice that allowed for the
	// collector's timing.
	const boundMB = 8
	grown := (liveHeap() - before) / (1 << 20)
	t.Logf("16 closed json_50k transactions hold %d MB of heap (bound %d)", grown, boundMB)
	if grown > boundMB {
		t.Errorf("16 closed json_50k transactions hold %d MB of heap, want at most %d", grown, boundMB)
	}
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

package crs

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreruleset/go-ftw/v2/test"

	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

// accelModuleEnv names the accelerated build (make test sets it).
const accelModuleEnv = "CORAZAWAF_ACCEL_MODULE"

// TestCRSAcceleratedMatchesStock runs the CRS regression suite three times
// through Envoy: the stock module; the accelerated module in prefilter
// mode, which must log exactly the rule ids stock logs, test by test and
// stage by stage; and the accelerated module in shadow mode, which must
// report no disagreement (corazawaf.accel_disagreements stays 0 and no
// disagreement line reaches the log).
func TestCRSAcceleratedMatchesStock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the CRS regression suite three times through Envoy")
	}
	accelModule := os.Getenv(accelModuleEnv)
	if accelModule == "" {
		requireOrSkip(t, "$%s is not set", accelModuleEnv)
	}
	if _, err := os.Stat(accelModule); err != nil {
		requireOrSkip(t, "no accelerated module at %s: %v", accelModule, err)
	}
	suite, err := loadSuite()
	if err != nil {
		t.Fatal(err)
	}
	upstream := startReflector(t)

	runs := []struct{ name, module, acceleration string }{
		{"stock", modulePath(t), ""},
		{"prefilter", accelModule, "prefilter"},
		{"shadow", accelModule, "shadow"},
	}
	logged := map[string]map[string][][]uint{}
	// unfinished are tests a run could not finish (no answer in time on a
	// loaded machine): they cannot be compared, and are reported.
	unfinished := map[string]bool{}
	for _, r := range runs {
		start := time.Now()
		p := startProxyWith(t, r.module, filterConfigWith(t, r.acceleration), upstream)
		rc, err := newRunnerConfig(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkLoopbackOnly(rc, suite, p.port); err != nil {
			t.Fatal(err)
		}
		if r.acceleration == "shadow" {
			// Shadow mode runs every rule and, on top, Coraza's own
			// regexp for every expression the matcher ruled out: the
			// suite's largest requests take seconds.
			rc.ReadTimeout = 30 * time.Second
		}
		out, err := runSuite(rc, suite)
		if err != nil {
			t.Fatal(err)
		}
		p.failIfEnvoyDied(t)
		logged[r.name] = out.stats.TriggeredRules
		for id := range out.errors {
			unfinished[id] = true
		}
		t.Logf("%s: %d tests logged rules, %d passed, in %s", r.name, len(out.stats.TriggeredRules),
			len(out.stats.Success), time.Since(start).Round(time.Second))
		if r.acceleration == "shadow" {
			checkNoDisagreement(t, p)
		}
		if err := p.envoy.Stop(); err != nil {
			t.Errorf("stopping Envoy: %v", err)
		}
	}
	if len(unfinished) > 0 {
		t.Logf("not compared, unfinished in some run: %v", slices.Sorted(maps.Keys(unfinished)))
	}
	if len(unfinished) > 20 {
		t.Errorf("%d tests did not finish in every run: too few comparisons", len(unfinished))
	}
	for _, accel := range []string{"prefilter", "shadow"} {
		differ := compareLogged(logged["stock"], logged[accel], unfinished)
		for _, d := range differ[:min(len(differ), 20)] {
			t.Errorf("%s: %s", accel, d)
		}
		compared := len(testIDs(suite)) - len(unfinished)
		summary := fmt.Sprintf("CRS regression, %s vs stock: %d of %d tests log the same rule ids, %d differ, %d not finished",
			accel, compared-len(differ), compared, len(differ), len(unfinished))
		t.Log(summary)
		fmt.Println(summary)
	}
}

// compareLogged lists the tests whose logged rule ids (a multiset per
// stage) differ between two runs, leaving out those in skip.
func compareLogged(want, got map[string][][]uint, skip map[string]bool) []string {
	var differ []string
	ids := slices.Sorted(maps.Keys(want))
	for id := range got {
		if _, ok := want[id]; !ok {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		if skip[id] {
			continue
		}
		w, g := want[id], got[id]
		if len(w) != len(g) {
			differ = append(differ, fmt.Sprintf("%s: %d stages logged, stock %d", id, len(g), len(w)))
			continue
		}
		for i := range w {
			ws, gs := slices.Sorted(slices.Values(w[i])), slices.Sorted(slices.Values(g[i]))
			if !slices.Equal(ws, gs) {
				differ = append(differ, fmt.Sprintf("%s stage %d: logged %v, stock %v", id, i, gs, ws))
			}
		}
	}
	return differ
}

func checkNoDisagreement(t *testing.T, p *proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stats, err := p.envoy.Stats(ctx)
	if err != nil {
		t.Fatalf("reading Envoy's stats: %v", err)
	}
	found := false
	for name, v := range stats {
		if strings.HasSuffix(name, "accel_disagreements") {
			found = true
			if v != 0 {
				t.Errorf("%s = %d, want 0", name, v)
			}
		}
	}
	if !found {
		t.Errorf("no accel_disagreements counter in Envoy's stats")
	}
	log, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "acceleration disagreement"); n > 0 {
		t.Errorf("%d disagreement lines in Envoy's log", n)
	}
	if !strings.Contains(string(log), "acceleration shadow:") {
		t.Errorf("the accelerated module did not log its acceleration summary")
	}
}

// testIDs are the suite's test ids.
func testIDs(suite []*test.FTWTest) map[string]bool {
	ids := map[string]bool{}
	for _, unit := range suite {
		ids[unit.Tests[0].IdString()] = true
	}
	return ids
}

// TestAcceleratedModuleBlocksTheEntityBypass is the request that went
// through the accelerated module while the stock one blocked it (full CRS,
// paranoia level 1, blocking): htmlEntityDecode keeps its length, which
// Coraza reports as no change, and the accelerator's collector, then
// multiMatch, never saw the decoded value.
func TestAcceleratedModuleBlocksTheEntityBypass(t *testing.T) {
	accelModule := os.Getenv(accelModuleEnv)
	if accelModule == "" {
		requireOrSkip(t, "$%s is not set", accelModuleEnv)
	}
	if _, err := os.Stat(accelModule); err != nil {
		requireOrSkip(t, "no accelerated module at %s: %v", accelModule, err)
	}
	cfg, err := json.Marshal(map[string]any{"directives": []string{
		"Include @coraza.conf", "SecRuleEngine On", "SecAuditEngine Off",
		"Include @crs-setup.conf", "Include @owasp_crs/*.conf",
	}})
	if err != nil {
		t.Fatal(err)
	}
	upstream := startReflector(t)
	target := "/search?q=" + url.QueryEscape(crscorpus.Bypass)
	for _, module := range []string{modulePath(t), accelModule} {
		p := startProxyWith(t, module, string(cfg), upstream)
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.port, target))
		if err != nil {
			t.Fatalf("%s: %v", module, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s answers %d to the entity bypass, want 403", module, resp.StatusCode)
		}
		if err := p.envoy.Stop(); err != nil {
			t.Errorf("stopping Envoy: %v", err)
		}
	}
}

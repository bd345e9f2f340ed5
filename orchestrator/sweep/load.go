package sweep

import (
	"maps"
	"math"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/precheck"
)

// stepRun is one Fortio run of a step: the shape, a member of a mixed
// shape, or one of the attacks sent beside them.
type stepRun struct {
	spec   loadgen.Spec
	member string // the shape's name, or the attack's
	weight int    // a member's weight; 0 for an attack
	// want is an attack's status (precheck.Attacks); 0 for benign load.
	want int
}

func (r stepRun) attack() bool { return r.want != 0 }

// runs is the step's load at rate over connections: the shape, or each
// member of a mixed shape at its weight's share of the rate over
// connections of its own (plan.MemberConnections), then, with an attack
// share, each of the configuration's
// attacks at an equal part of that share, over a connection of its own,
// sent Apart so that the benign figures stay the benign calls'.
func (c *configRun) runs(rate, connections int) []stepRun {
	base := c.transportSpec()
	base.Warmup, base.Duration = c.opts.Plan.Warmup, c.opts.Plan.Measure
	var attacks []precheck.Check
	attackRate := c.opts.Plan.AttackRate(rate)
	if attackRate > 0 {
		attacks = precheck.Attacks(c.cfg)
	}
	benignRate := float64(rate)
	if len(attacks) > 0 {
		benignRate -= attackRate
	}
	var runs []stepRun
	for _, m := range c.members() {
		s := base
		s.URL += "/api/orders"
		s.Method, s.ContentType, s.Body = m.Shape.Method, m.Shape.ContentType, m.Shape.Body
		s.QPS, s.Connections = benignRate*m.share, connections
		if len(c.shape.Members) > 0 {
			s.Connections = c.opts.Plan.MemberConnections(s.QPS)
		}
		runs = append(runs, stepRun{spec: s, member: m.Shape.Name, weight: m.Weight})
	}
	for _, a := range attacks {
		s := base
		s.URL += a.Path
		s.Method, s.ContentType, s.Body = a.Method, a.ContentType, a.Body
		// Marked, so that the backend counts the attacks that reach it:
		// none may behind a WAF that blocks them.
		s.Headers = maps.Clone(a.Headers)
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[backend.HeaderAttack] = "1"
		s.QPS, s.Connections, s.Apart = attackRate/float64(len(attacks)), 1, true
		runs = append(runs, stepRun{spec: s, member: a.Name, want: a.WantStatus})
	}
	return runs
}

// weighedMember is a member of the shape with its share of the rate.
type weighedMember struct {
	plan.Member
	share float64
}

// members are the shape's members, or the plain shape as its only one.
func (c *configRun) members() []weighedMember {
	members := c.shape.Members
	if members == nil {
		members = []plan.Member{{Shape: c.shape, Weight: 1}}
	}
	total := 0
	for _, m := range members {
		total += m.Weight
	}
	out := make([]weighedMember, len(members))
	for i, m := range members {
		out[i] = weighedMember{m, float64(m.Weight) / float64(total)}
	}
	return out
}

func specsOf(runs []stepRun) []loadgen.Spec {
	specs := make([]loadgen.Spec, len(runs))
	for i, r := range runs {
		specs[i] = r.spec
	}
	return specs
}

// benignConnections are the connections of the benign runs: what the
// step's counts are over.
func benignConnections(runs []stepRun) int {
	n := 0
	for _, r := range runs {
		if !r.attack() {
			n += r.spec.Connections
		}
	}
	return n
}

// memberRows are a step's runs as members.csv records them; none for a
// step of one run.
func memberRows(row dataset.StepRow, runs []stepRun, each []loadgen.Result) []dataset.MemberRow {
	if len(runs) < 2 || len(each) != len(runs) {
		return nil
	}
	out := make([]dataset.MemberRow, len(runs))
	for i, run := range runs {
		r := dataset.MemberRow{SweepID: row.SweepID, Round: row.Round, ConfigID: row.ConfigID, Seq: row.Seq,
			Member: run.member, Role: dataset.RoleBenign, Weight: run.weight, TargetRPS: run.spec.QPS, Connections: run.spec.Connections,
			AchievedRPS: math.NaN(), P50Ms: math.NaN(), P99Ms: math.NaN()}
		if run.attack() {
			r.Role, r.WantStatus = dataset.RoleAttack, run.want
		}
		r.Misses = misses(run, each[i].Codes)
		if w := each[i].Window; w != nil {
			r.Scheduled, r.Completed, r.Non2xx, r.SocketErrors = int64(math.Round(w.Scheduled)), w.Completed, w.Non2xx, w.SocketErrors
			r.AchievedRPS, r.P50Ms, r.P99Ms = w.AchievedQPS(), w.Corrected.P50Ms, w.Corrected.P99Ms
		}
		out[i] = r
	}
	return out
}

// misses counts the calls of a whole run (Fortio's status counts, warm-up
// and tail included) that the WAF got wrong: an attack's calls that got
// another status than its own, socket errors included (the attack's fate
// is unknown); a benign run's calls that were blocked.
func misses(run stepRun, codes map[int]int64) int64 {
	if !run.attack() {
		return codes[precheck.BlockStatus]
	}
	var n int64
	for code, calls := range codes {
		if code != run.want {
			n += calls
		}
	}
	return n
}

// fillAttacks sums the members' attack accounting into the step's row;
// nothing when no attack was sent (a mix's blocked benign calls are then
// errors like any other).
func fillAttacks(row *dataset.StepRow, members []dataset.MemberRow) {
	if !slices.ContainsFunc(members, func(m dataset.MemberRow) bool { return m.Role == dataset.RoleAttack }) {
		return
	}
	for _, m := range members {
		if m.Role == dataset.RoleAttack {
			row.AttackCalls += m.Completed
			row.AttackMisses += m.Misses
		} else {
			row.BenignBlocked += m.Misses
		}
	}
}

package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// MembersFile is members.csv: per step of several runs (a mixed shape's
// members, attacks sent beside the load), what each run was sent and got.
// Sweeps of plain shapes without attacks have none.
const MembersFile = "members.csv"

// Roles of a member.
const (
	RoleBenign = "benign" // the shape, or a member of a mixed shape
	RoleAttack = "attack" // one of the attacks sent with the load
)

// MemberRow is a line of members.csv: one run of a step (its StepRow has
// the same round, config and seq), counted over the step's window like
// the step itself. Float fields use NaN for "not measured".
type MemberRow struct {
	SweepID  string
	Round    int
	ConfigID string
	Seq      int
	Member   string // the member's shape, or the attack's name
	Role     string // RoleBenign or RoleAttack
	Weight   int    // a member's weight in its mix; 0 for an attack
	// WantStatus is the status an attack must get (403 where the
	// configuration inspects, 200 where nothing does); 0 for benign.
	WantStatus int
	// TargetRPS is the member's share of the step's rate; Connections its
	// share of the step's connections.
	TargetRPS   float64
	Connections int
	Scheduled   int64
	Completed   int64
	Non2xx      int64
	// SocketErrors are calls that got no HTTP response.
	SocketErrors int64
	AchievedRPS  float64
	// Latency of the member's calls intended inside the window, corrected
	// for coordinated omission (StepRow's P50Ms and P99Ms are over all
	// members' calls).
	P50Ms, P99Ms float64
	// Misses are the run's calls the WAF got wrong, over the whole run
	// (warm-up and tail included): an attack's calls that got another
	// status than WantStatus, a benign run's calls that were blocked (403).
	Misses int64
}

type mr = MemberRow

var memberSchema = schema[MemberRow]{
	strCol("sweep_id", func(r *mr) *string { return &r.SweepID }),
	intCol("round", func(r *mr) *int { return &r.Round }),
	strCol("config_id", func(r *mr) *string { return &r.ConfigID }),
	intCol("seq", func(r *mr) *int { return &r.Seq }),
	strCol("member", func(r *mr) *string { return &r.Member }),
	strCol("role", func(r *mr) *string { return &r.Role }),
	intCol("weight", func(r *mr) *int { return &r.Weight }),
	intCol("want_status", func(r *mr) *int { return &r.WantStatus }),
	floatCol("target_rps", func(r *mr) *float64 { return &r.TargetRPS }),
	intCol("connections", func(r *mr) *int { return &r.Connections }),
	int64Col("scheduled", func(r *mr) *int64 { return &r.Scheduled }),
	int64Col("completed", func(r *mr) *int64 { return &r.Completed }),
	int64Col("non2xx", func(r *mr) *int64 { return &r.Non2xx }),
	int64Col("socket_errors", func(r *mr) *int64 { return &r.SocketErrors }),
	floatCol("achieved_rps", func(r *mr) *float64 { return &r.AchievedRPS }),
	floatCol("p50_ms", func(r *mr) *float64 { return &r.P50Ms }),
	floatCol("p99_ms", func(r *mr) *float64 { return &r.P99Ms }),
	int64Col("misses", func(r *mr) *int64 { return &r.Misses }),
}

// MembersHeader is the header of members.csv, in column order.
func MembersHeader() []string { return memberSchema.header() }

// Of reports whether the member belongs to step s.
func (r MemberRow) Of(s StepRow) bool {
	return r.Round == s.Round && r.ConfigID == s.ConfigID && r.Seq == s.Seq
}

// ReadMembers reads members.csv; a sweep without one has no members. A
// step's members are written before its row (Journal.Append): after a
// crash between the two the step is measured again, and a member written
// twice keeps its last line.
func ReadMembers(path string) ([]MemberRow, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	type key struct {
		step   stepKey
		member string
	}
	var rows []MemberRow
	at := map[key]int{}
	err = readCSV(withoutTornLine(data), memberSchema, func(row MemberRow, _ int) error {
		k := key{stepKey{row.Round, row.ConfigID, row.Seq}, row.Member}
		if i, seen := at[k]; seen {
			rows[i] = row
			return nil
		}
		at[k] = len(rows)
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

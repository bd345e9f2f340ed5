package dataset

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// AllRounds is the Round of a KneeRow that aggregates every round of a
// config; it reads "all" in knees.csv.
const AllRounds = -1

// Censoring of a knee; bound_rps gives the bound.
const (
	CensoredNone  = "none"
	CensoredAbove = "above" // passed the top of the ladder: knee >= bound_rps (the top)
	CensoredBelow = "below" // failed the lowest rate tried: knee < bound_rps (the bottom of the ladder, or the floor after a descent)
)

// KneeRow is a line of knees.csv: the knee of one config in one round, or,
// with Round == AllRounds, the aggregate over the valid rounds of a config
// (see BuildKnees). Float fields use NaN for "not available" (empty cell).
type KneeRow struct {
	SweepID  string
	Round    int // a round, or AllRounds
	Rounds   int // valid rounds behind the row: 0 or 1 for a round row
	ConfigID string
	Flavor   string
	Tier     string
	Shape    string

	KneeRPS  int    // 0 when censored below or invalid
	Censored string // CensoredNone, CensoredAbove, CensoredBelow
	// BoundRPS is the censoring bound (knee.Result.Bound): knee >= BoundRPS
	// when censored above, knee < BoundRPS when censored below; 0 when not
	// censored. On an aggregate row it is the bound of the majority
	// censoring, the most conservative over the rounds that share it.
	BoundRPS  int
	Invalid   bool
	Reasons   []string
	Confirmed bool
	// ConfirmFlips counts confirmation re-runs that failed at a rate that
	// had passed: the knee moved down under its own re-measurement, a sign
	// of noise (summed over rounds on an aggregate row).
	ConfirmFlips  int
	LowestFailRPS int // 0 when nothing failed
	// ContestedByRPS is the lowest rate at or below the knee at which
	// another valid run of the round (of an SLO search: they run at and
	// below the knee) failed what the capacity search judges: the proxy
	// did not serve there what the search's runs served, so its capacity
	// varies more from run to run than one confirmation shows. 0 when
	// none; on an aggregate row, the lowest of the valid rounds' that is
	// at or below the aggregate's knee.
	ContestedByRPS int

	P50MsAtKnee      float64 // from the last passing run at the knee rate
	P99MsAtKnee      float64
	CoresPer1kAtKnee float64
	RSSPeakMB        float64 // highest step peak of the search
	// RSSMBAtKnee is the proxy's peak RSS in the last passing run at the
	// knee rate: the memory to plan for at that load (RSSPeakMB also
	// counts the overloaded steps above the knee).
	RSSMBAtKnee float64
	// AuditBytesPerReqAtKnee and ProxyDiskWriteBytesPerSAtKnee are the
	// last passing run's at the knee rate (StepRow's; NaN when not
	// measured): what the audit log costs in bytes at that load.
	AuditBytesPerReqAtKnee        float64
	ProxyDiskWriteBytesPerSAtKnee float64

	KneeVsEnvoy       float64 // knee / knee of flavor envoy for the same shape and round
	AddedP99MsVsEnvoy float64 // p99 at the knee minus envoy's p99 at the same target

	// Spread over rounds; NaN on round rows.
	KneeMedianRPS, KneeMinRPS, KneeMaxRPS, KneeStddevRPS float64
	// Transport is how the load reached the proxy (the steps').
	Transport plan.Transport
	// Cost is the CPU line fitted to the configuration's passing steps:
	// the round's on a round row, every round's on the aggregate.
	Cost CostModel
}

// kr shortens the column accessors below.
type kr = KneeRow

// roundCol writes AllRounds as "all".
func roundCol[T any](name string, field func(*T) *int) column[T] {
	c := intCol(name, field)
	get, set := c.get, c.set
	c.get = func(r *T) string {
		if *field(r) == AllRounds {
			return "all"
		}
		return get(r)
	}
	c.set = func(r *T, v string) error {
		if v == "all" {
			*field(r) = AllRounds
			return nil
		}
		return set(r, v)
	}
	return c
}

// kneeSchema is the one declaration of knees.csv.
var kneeSchema = slices.Concat(schema[KneeRow]{
	strCol("sweep_id", func(r *kr) *string { return &r.SweepID }),
	roundCol("round", func(r *kr) *int { return &r.Round }),
	intCol("rounds", func(r *kr) *int { return &r.Rounds }),
	strCol("config_id", func(r *kr) *string { return &r.ConfigID }),
	strCol("flavor", func(r *kr) *string { return &r.Flavor }),
	strCol("tier", func(r *kr) *string { return &r.Tier }),
	strCol("shape", func(r *kr) *string { return &r.Shape }),
	intCol("knee_rps", func(r *kr) *int { return &r.KneeRPS }),
	strCol("censored", func(r *kr) *string { return &r.Censored }),
	intCol("bound_rps", func(r *kr) *int { return &r.BoundRPS }),
	boolCol("invalid", func(r *kr) *bool { return &r.Invalid }),
	listCol("reasons", func(r *kr) *[]string { return &r.Reasons }),
	boolCol("confirmed", func(r *kr) *bool { return &r.Confirmed }),
	intCol("confirm_flips", func(r *kr) *int { return &r.ConfirmFlips }),
	intCol("lowest_fail_rps", func(r *kr) *int { return &r.LowestFailRPS }),
	floatCol("p50_ms_at_knee", func(r *kr) *float64 { return &r.P50MsAtKnee }),
	floatCol("p99_ms_at_knee", func(r *kr) *float64 { return &r.P99MsAtKnee }),
	floatCol("cores_per_1k_at_knee", func(r *kr) *float64 { return &r.CoresPer1kAtKnee }),
	floatCol("rss_peak_mb", func(r *kr) *float64 { return &r.RSSPeakMB }),
	floatCol("knee_vs_envoy", func(r *kr) *float64 { return &r.KneeVsEnvoy }),
	floatCol("added_p99_ms_vs_envoy", func(r *kr) *float64 { return &r.AddedP99MsVsEnvoy }),
	floatCol("knee_median_rps", func(r *kr) *float64 { return &r.KneeMedianRPS }),
	floatCol("knee_min_rps", func(r *kr) *float64 { return &r.KneeMinRPS }),
	floatCol("knee_max_rps", func(r *kr) *float64 { return &r.KneeMaxRPS }),
	floatCol("knee_stddev_rps", func(r *kr) *float64 { return &r.KneeStddevRPS }),
	floatCol("rss_mb_at_knee", func(r *kr) *float64 { return &r.RSSMBAtKnee }),
	added(floatCol("audit_bytes_per_req_at_knee", func(r *kr) *float64 { return &r.AuditBytesPerReqAtKnee })),
	added(floatCol("proxy_disk_write_bytes_per_s_at_knee", func(r *kr) *float64 { return &r.ProxyDiskWriteBytesPerSAtKnee })),
}, transportCols(func(r *kr) *plan.Transport { return &r.Transport }), schema[KneeRow]{
	added(zeroIfEmpty(intCol("contested_by_rps", func(r *kr) *int { return &r.ContestedByRPS }))),
	added(floatCol("cost_idle_cores", func(r *kr) *float64 { return &r.Cost.IdleCores })),
	added(floatCol("cost_cores_per_1k", func(r *kr) *float64 { return &r.Cost.CoresPer1k })),
	added(floatCol("cost_fit_rmse_cores", func(r *kr) *float64 { return &r.Cost.RMSECores })),
	added(zeroIfEmpty(intCol("cost_fit_steps", func(r *kr) *int { return &r.Cost.Steps }))),
	added(zeroIfEmpty(intCol("cost_low_rps", func(r *kr) *int { return &r.Cost.LowRPS }))),
	added(zeroIfEmpty(intCol("cost_high_rps", func(r *kr) *int { return &r.Cost.HighRPS }))),
})

// KneesHeader is the header of knees.csv, in column order.
func KneesHeader() []string { return kneeSchema.header() }

// WriteKnees replaces path with the rows, atomically.
func WriteKnees(path string, rows []KneeRow) error {
	return writeCSVFile(path, kneeSchema, rows)
}

// ReadKnees reads knees.csv, checking the header and naming bad lines.
func ReadKnees(path string) ([]KneeRow, error) {
	return readCSVFile(path, kneeSchema)
}

// writeCSVFile replaces path with a header and the rows, atomically.
func writeCSVFile[T any](path string, s schema[T], rows []T) error {
	return writeFileAtomic(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(s.header()); err != nil {
			return err
		}
		for i := range rows {
			if err := cw.Write(s.encode(&rows[i])); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// readCSVFile reads a whole file of the schema.
func readCSVFile[T any](path string, s schema[T]) ([]T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	var rows []T
	if err := readCSV(data, s, func(row T, _ int) error { rows = append(rows, row); return nil }); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// RoundLabel renders a KneeRow round for people: a number or "all".
func RoundLabel(round int) string {
	if round == AllRounds {
		return "all"
	}
	return strconv.Itoa(round)
}

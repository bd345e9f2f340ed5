package dataset

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// Verdicts of a step.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictInvalid = "invalid"
)

// VerdictOf names the outcome of a knee step.
func VerdictOf(st knee.Step) string {
	switch {
	case st.Invalid:
		return VerdictInvalid
	case st.Passed():
		return VerdictPass
	default:
		return VerdictFail
	}
}

// StepRow is one measured run: a line of steps.csv. Float fields use NaN
// for "not measured" (an empty cell).
type StepRow struct {
	SweepID     string
	Round       int
	ConfigID    string // plan.Config.ID()
	Flavor      string
	Tier        string
	Shape       string
	ShapeBytes  int
	ShapeFields int
	Seq         int    // index of the step within its config's searches in this round, from 0
	Kind        string // knee.Kind: ladder, descend, bisect, confirm, retry
	// SLOMs names the search the step belongs to: 0 for the capacity
	// knee's, else the p99 objective (ms) whose highest rate it searches.
	SLOMs       float64
	TargetRPS   int
	Connections int
	WarmupS     float64
	MeasureS    float64
	StartedAt   time.Time

	// WindowS is the measured window's actual length. Scheduled is
	// target * window; Completed, Non2xx and SocketErrors count responses
	// that arrived inside the window (see loadgen.Window).
	WindowS       float64
	Scheduled     int64
	Completed     int64
	Completion    float64
	Non2xx        int64
	SocketErrors  int64
	SocketsOpened int64
	ErrorRatio    float64
	// AchievedRPS is Completed per second of the window (Fortio's
	// convention: every call that ended, errors and the client's timeouts
	// included); ServedRPS is what was answered.
	AchievedRPS float64

	// Latency of the calls intended inside the window, corrected for
	// coordinated omission: timed from each call's intended send.
	P50Ms, P90Ms, P99Ms, P999Ms, MaxMs float64
	// The same calls timed from their actual send, as Fortio times them.
	P50RawMs, P99RawMs float64
	// LoadgenLatenessP99Ms is the load generator's own lateness (actual
	// minus intended send, on free connections; see loadgen.Window): what
	// it adds to corrected latency, whatever the proxy does.
	LoadgenLatenessP99Ms float64
	// Unsent counts calls intended inside the window that did not end in
	// the run: never sent, or still in flight when it stopped.
	Unsent int64
	// ProxyCompleted is the measured server's own count of requests in the
	// window (Envoy's downstream_rq_completed delta, nginx's stub_status
	// requests, the backend's count for direct); -1 when there was no such
	// counter (nginx and direct before they had one).
	ProxyCompleted int64

	ProxyCPUS         float64 // proxy CPU seconds during the measured window
	ProxyIdleCPUSPerS float64 // proxy CPU seconds per second when idle
	// CoresPer1k is CPU per 1,000 successful requests in the window, idle
	// corrected: the proxy's, or for the direct flavor (no proxy) the
	// backend's when it runs as its own process.
	CoresPer1k float64
	// BackendCPUS is the backend's CPU seconds during the window (NaN when
	// it shares the load generator's process).
	BackendCPUS float64
	// ProxyThrottledS is how long the CFS quota throttled the proxy during
	// the window (Kubernetes targets; NaN where there is no quota).
	ProxyThrottledS float64
	// StealS is the hypervisor's steal from the measured CPUs during the
	// window (NaN where it cannot be read).
	StealS float64
	// StealPeakShare is the most the hypervisor took from the measured
	// CPUs in any one second of the window, in seconds per second (a
	// share of one CPU, summed over them); NaN where it was not read
	// every second (Kubernetes targets, and datasets from before it).
	StealPeakShare         float64
	ProxyRSSPeakMB         float64 // peak during the step
	ProxyRSSLifetimePeakMB float64 // peak since the proxy started (rule compilation included)
	LoadgenCPUS            float64
	LoadgenCPUFraction     float64 // of the load generator's CPU budget
	// LoadgenRunDelayS is how long the load generator's threads waited
	// for a CPU during the window (NaN when unknown).
	LoadgenRunDelayS float64
	ProxyRestarted   bool

	Verdict string   // VerdictPass, VerdictFail, VerdictInvalid
	Reasons []string // why invalid (or failed)
	RawFile string   // Fortio JSON, relative to the sweep directory

	// AuditBytesPerReq is what the audit log grew by in the window per
	// request completed there (NaN when the configuration writes none or
	// the target cannot read it).
	AuditBytesPerReq float64
	// ProxyDiskWriteBytesPerS is what the proxy's processes wrote to
	// storage per second of the window (target.Usage.ProxyWrittenBytes;
	// NaN where it cannot be read, 0 on a file system in memory).
	ProxyDiskWriteBytesPerS float64
	// Transport is how the load reached the proxy (the plan's).
	Transport plan.Transport
	// AttackCalls, AttackMisses and BenignBlocked account for the attacks
	// sent beside the benign load (plan.AttackSharePct), whose calls are
	// in none of the counts above: attack calls completed in the window;
	// attack calls of the whole run (warm-up and tail included: one attack
	// through is one too many) that got another status than theirs; and
	// benign calls of the whole run that got the block status (403). A
	// miss or a blocked benign call fails the step. All 0 without attacks.
	AttackCalls, AttackMisses, BenignBlocked int64
	// ProxyCountSkewMs bounds how much longer or shorter than the window
	// the span between the proxy counter's two readings (ProxyCompleted)
	// may be: each was read after its edge, somewhere between asking the
	// proxy and its answer. The cross-check of the two counts allows the
	// requests of that span. NaN when the proxy has no counter.
	ProxyCountSkewMs float64
	// Intended counts the calls intended in the window; those of them
	// that ended during the run, however late (Intended - Unsent), are the
	// completion the verdict uses (knee.Step), which no backlog from
	// before the window can inflate. -1 in rows measured before it was
	// counted.
	Intended int64
	// P50FirstFifthMs and P50LastFifthMs are the median corrected latency
	// of the calls intended in the window's first and last fifth: a
	// queue growing through the window fails the step (knee.Step's
	// Sustained). NaN in rows measured before they were.
	P50FirstFifthMs, P50LastFifthMs float64
}

// IsCapacity reports a step of the capacity knee's search.
func (r StepRow) IsCapacity() bool { return r.SLOMs == 0 && r.Kind != KindBaseline }

// Served counts the 2xx responses in the window: the requests the
// configuration actually delivered, which CPU per request is divided by.
func (r StepRow) Served() int64 { return r.Completed - r.Non2xx - r.SocketErrors }

// ServedRPS is Served per second of the window. Unlike AchievedRPS it
// leaves out the calls the client gave up on and the errors, which an
// overloaded proxy has many of (a proxy answering 2 requests a second can
// end 20 calls a second at the client, by timeout). NaN without a window.
func (r StepRow) ServedRPS() float64 {
	if r.WindowS <= 0 {
		return math.NaN()
	}
	return float64(r.Served()) / r.WindowS
}

// CapacitySteps keeps the rows of the capacity knee's search.
func CapacitySteps(rows []StepRow) []StepRow {
	var out []StepRow
	for _, r := range rows {
		if r.IsCapacity() {
			out = append(out, r)
		}
	}
	return out
}

// AsRecorded is row as steps.csv records it and ReadSteps reads it back:
// its figures rounded to significantDigits. The sweep judges a step on it,
// so that the verdict it acts on is the one a replay of steps.csv derives
// (a p99 of 10.0000004 ms, written "10", would otherwise fail a 10 ms
// objective live and meet it in the dataset, and a resumed search would
// not replay).
func AsRecorded(row StepRow) StepRow {
	back, err := stepSchema.decode(stepSchema.encode(&row))
	if err != nil {
		// Every column reads back what it writes (TestAsRecordedIsAFixedPoint);
		// a row that did not would fail loudly when steps.csv is read.
		return row
	}
	return back
}

// KneeStep is the row as the knee search sees it (used to replay a search):
// an SLO search's row passes only within its objective.
func (r StepRow) KneeStep() knee.Step {
	return knee.Step{
		MaxP99Ms: r.SLOMs, P99Ms: r.P99Ms,
		Target:          r.TargetRPS,
		Scheduled:       r.Scheduled,
		Completed:       r.Completed,
		Intended:        max(r.Intended, 0),
		Answered:        max(r.Intended-r.Unsent, 0),
		FirstFifthP50Ms: r.P50FirstFifthMs, LastFifthP50Ms: r.P50LastFifthMs, RawP50Ms: r.P50RawMs,
		Errors:         r.Non2xx + r.SocketErrors,
		Misses:         r.AttackMisses + r.BenignBlocked,
		Invalid:        r.Verdict == VerdictInvalid,
		InvalidReasons: append([]string(nil), r.Reasons...),
	}
}

type stepKey struct {
	round    int
	configID string
	seq      int
}

func (r StepRow) key() stepKey { return stepKey{r.Round, r.ConfigID, r.Seq} }

func (k stepKey) String() string {
	return fmt.Sprintf("round %d, config %s, seq %d", k.round, k.configID, k.seq)
}

// sr shortens the column accessors below.
type sr = StepRow

// stepSchema is the one declaration of steps.csv.
var stepSchema = slices.Concat(schema[StepRow]{
	strCol("sweep_id", func(r *sr) *string { return &r.SweepID }),
	intCol("round", func(r *sr) *int { return &r.Round }),
	strCol("config_id", func(r *sr) *string { return &r.ConfigID }),
	strCol("flavor", func(r *sr) *string { return &r.Flavor }),
	strCol("tier", func(r *sr) *string { return &r.Tier }),
	strCol("shape", func(r *sr) *string { return &r.Shape }),
	intCol("shape_bytes", func(r *sr) *int { return &r.ShapeBytes }),
	intCol("shape_fields", func(r *sr) *int { return &r.ShapeFields }),
	intCol("seq", func(r *sr) *int { return &r.Seq }),
	strCol("kind", func(r *sr) *string { return &r.Kind }),
	floatCol("slo_ms", func(r *sr) *float64 { return &r.SLOMs }),
	intCol("target_rps", func(r *sr) *int { return &r.TargetRPS }),
	intCol("connections", func(r *sr) *int { return &r.Connections }),
	floatCol("warmup_s", func(r *sr) *float64 { return &r.WarmupS }),
	floatCol("measure_s", func(r *sr) *float64 { return &r.MeasureS }),
	timeCol("started_at", func(r *sr) *time.Time { return &r.StartedAt }),
	floatCol("window_s", func(r *sr) *float64 { return &r.WindowS }),
	int64Col("scheduled", func(r *sr) *int64 { return &r.Scheduled }),
	int64Col("completed", func(r *sr) *int64 { return &r.Completed }),
	floatCol("completion", func(r *sr) *float64 { return &r.Completion }),
	int64Col("non2xx", func(r *sr) *int64 { return &r.Non2xx }),
	int64Col("socket_errors", func(r *sr) *int64 { return &r.SocketErrors }),
	int64Col("sockets_opened", func(r *sr) *int64 { return &r.SocketsOpened }),
	floatCol("error_ratio", func(r *sr) *float64 { return &r.ErrorRatio }),
	floatCol("achieved_rps", func(r *sr) *float64 { return &r.AchievedRPS }),
	floatCol("p50_ms", func(r *sr) *float64 { return &r.P50Ms }),
	floatCol("p90_ms", func(r *sr) *float64 { return &r.P90Ms }),
	floatCol("p99_ms", func(r *sr) *float64 { return &r.P99Ms }),
	floatCol("p999_ms", func(r *sr) *float64 { return &r.P999Ms }),
	floatCol("max_ms", func(r *sr) *float64 { return &r.MaxMs }),
	floatCol("p50_raw_ms", func(r *sr) *float64 { return &r.P50RawMs }),
	floatCol("p99_raw_ms", func(r *sr) *float64 { return &r.P99RawMs }),
	floatCol("loadgen_lateness_p99_ms", func(r *sr) *float64 { return &r.LoadgenLatenessP99Ms }),
	int64Col("unsent", func(r *sr) *int64 { return &r.Unsent }),
	int64Col("proxy_completed", func(r *sr) *int64 { return &r.ProxyCompleted }),
	floatCol("proxy_cpu_s", func(r *sr) *float64 { return &r.ProxyCPUS }),
	floatCol("proxy_idle_cpu_s_per_s", func(r *sr) *float64 { return &r.ProxyIdleCPUSPerS }),
	floatCol("cores_per_1k", func(r *sr) *float64 { return &r.CoresPer1k }),
	floatCol("backend_cpu_s", func(r *sr) *float64 { return &r.BackendCPUS }),
	floatCol("proxy_throttled_s", func(r *sr) *float64 { return &r.ProxyThrottledS }),
	floatCol("cpu_steal_s", func(r *sr) *float64 { return &r.StealS }),
	floatCol("proxy_rss_peak_mb", func(r *sr) *float64 { return &r.ProxyRSSPeakMB }),
	floatCol("proxy_rss_lifetime_peak_mb", func(r *sr) *float64 { return &r.ProxyRSSLifetimePeakMB }),
	floatCol("loadgen_cpu_s", func(r *sr) *float64 { return &r.LoadgenCPUS }),
	floatCol("loadgen_cpu_fraction", func(r *sr) *float64 { return &r.LoadgenCPUFraction }),
	floatCol("loadgen_run_delay_s", func(r *sr) *float64 { return &r.LoadgenRunDelayS }),
	boolCol("proxy_restarted", func(r *sr) *bool { return &r.ProxyRestarted }),
	strCol("verdict", func(r *sr) *string { return &r.Verdict }),
	listCol("reasons", func(r *sr) *[]string { return &r.Reasons }),
	strCol("raw_file", func(r *sr) *string { return &r.RawFile }),
	added(floatCol("audit_bytes_per_req", func(r *sr) *float64 { return &r.AuditBytesPerReq })),
	added(floatCol("proxy_disk_write_bytes_per_s", func(r *sr) *float64 { return &r.ProxyDiskWriteBytesPerS })),
}, transportCols(func(r *sr) *plan.Transport { return &r.Transport }), schema[StepRow]{
	added(countCol("attack_calls", func(r *sr) *int64 { return &r.AttackCalls })),
	added(countCol("attack_misses", func(r *sr) *int64 { return &r.AttackMisses })),
	added(countCol("benign_blocked", func(r *sr) *int64 { return &r.BenignBlocked })),
	added(floatCol("proxy_count_skew_ms", func(r *sr) *float64 { return &r.ProxyCountSkewMs })),
	added(unknownIfEmpty(int64Col("intended", func(r *sr) *int64 { return &r.Intended }))),
	added(floatCol("p50_first_fifth_ms", func(r *sr) *float64 { return &r.P50FirstFifthMs })),
	added(floatCol("p50_last_fifth_ms", func(r *sr) *float64 { return &r.P50LastFifthMs })),
	added(floatCol("cpu_steal_peak_share", func(r *sr) *float64 { return &r.StealPeakShare })),
})

// StepsHeader is the header of steps.csv, in column order.
func StepsHeader() []string { return stepSchema.header() }

// WriteStepsHeader writes the header line of steps.csv.
func WriteStepsHeader(w io.Writer) error {
	line, err := csvLine(StepsHeader())
	if err != nil {
		return err
	}
	if _, err := w.Write(line); err != nil {
		return fmt.Errorf("write steps header: %w", err)
	}
	return nil
}

// csvLine encodes one record, newline included.
func csvLine(rec []string) ([]byte, error) {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	if err := cw.Write(rec); err != nil {
		return nil, fmt.Errorf("encode csv: %w", err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return nil, fmt.Errorf("encode csv: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadSteps reads steps.csv. It checks the header, names the line of any
// bad row, and rejects a second row for the same (round, config, seq). A
// last line without its newline is a write torn by a crash and is ignored
// (the journal truncates it before appending). An empty file has no rows.
func ReadSteps(path string) ([]StepRow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read steps: %w", err)
	}
	var rows []StepRow
	seen := map[stepKey]int{}
	err = readCSV(withoutTornLine(data), stepSchema, func(row StepRow, line int) error {
		if first, dup := seen[row.key()]; dup {
			return fmt.Errorf("line %d: duplicate step (%s), first on line %d", line, row.key(), first)
		}
		seen[row.key()] = line
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// withoutTornLine cuts data after its last newline.
func withoutTornLine(data []byte) []byte {
	return data[:bytes.LastIndexByte(data, '\n')+1]
}

// readCSV checks the header and decodes each record, passing its line.
func readCSV[T any](data []byte, s schema[T], each func(row T, line int) error) error {
	if len(data) == 0 {
		return nil
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1 // counted by decode, with a clearer message
	header, err := r.Read()
	if err != nil {
		return fmt.Errorf("line 1: %w", err)
	}
	if err := s.checkHeader(header); err != nil {
		return fmt.Errorf("line 1: %w", err)
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err // csv.ParseError names the line
		}
		line, _ := r.FieldPos(0)
		row, err := s.decode(rec)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if err := each(row, line); err != nil {
			return err
		}
	}
}

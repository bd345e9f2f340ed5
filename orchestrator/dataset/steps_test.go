package dataset

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

func TestStepsHeaderIsTheDeclaredSchema(t *testing.T) {
	want := []string{
		"sweep_id", "round", "config_id", "flavor", "tier", "shape", "shape_bytes", "shape_fields",
		"seq", "kind", "slo_ms", "target_rps", "connections", "warmup_s", "measure_s", "started_at",
		"window_s", "scheduled", "completed", "completion", "non2xx", "socket_errors", "sockets_opened",
		"error_ratio", "achieved_rps", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms",
		"p50_raw_ms", "p99_raw_ms", "loadgen_lateness_p99_ms", "unsent", "proxy_completed",
		"proxy_cpu_s", "proxy_idle_cpu_s_per_s", "cores_per_1k", "backend_cpu_s", "proxy_throttled_s", "cpu_steal_s", "proxy_rss_peak_mb",
		"proxy_rss_lifetime_peak_mb", "loadgen_cpu_s", "loadgen_cpu_fraction", "loadgen_run_delay_s", "proxy_restarted",
		"verdict", "reasons", "raw_file", "audit_bytes_per_req", "proxy_disk_write_bytes_per_s", "protocol", "tls",
		"attack_calls", "attack_misses", "benign_blocked", "proxy_count_skew_ms",
		"intended", "p50_first_fifth_ms", "p50_last_fifth_ms", "cpu_steal_peak_share",
	}
	if got := StepsHeader(); !reflect.DeepEqual(got, want) {
		t.Errorf("StepsHeader() = %v\nwant %v", got, want)
	}
	var buf bytes.Buffer
	if err := WriteStepsHeader(&buf); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != strings.Join(want, ",")+"\n" {
		t.Errorf("WriteStepsHeader wrote %q", got)
	}
}

// fullRow has every field set to a distinct value.
func fullRow(round int, configID string, seq int) StepRow {
	return StepRow{
		SweepID: "sw-1", Round: round, ConfigID: configID, Flavor: "waf", Tier: "full-crs", Shape: "json_1k",
		ShapeBytes: 1022, ShapeFields: 21, Seq: seq, Kind: "bisect", SLOMs: 50, TargetRPS: 2500 + seq, Connections: 64,
		WarmupS: 5, MeasureS: 20, StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Scheduled: 49984, Completed: 49900, Completion: 0.998319, Non2xx: 3, SocketErrors: 1,
		SocketsOpened: 67, ErrorRatio: 0.0000801603, AchievedRPS: 2495.1,
		P50Ms: 0.412, P90Ms: 0.9, P99Ms: 2.25, P999Ms: 7.5, MaxMs: 31.25,
		WindowS: 20.004, P50RawMs: 0.4, P99RawMs: 2.125, LoadgenLatenessP99Ms: 0.0625, Unsent: 7, ProxyCompleted: 49901,
		ProxyCPUS: 12.5, ProxyIdleCPUSPerS: 0.002, CoresPer1k: 0.25, BackendCPUS: 3.5, ProxyThrottledS: 0.25, StealS: 0.03, ProxyRSSPeakMB: 180.5,
		ProxyRSSLifetimePeakMB: 240.25, LoadgenCPUS: 8, LoadgenCPUFraction: 0.4, LoadgenRunDelayS: 0.125, ProxyRestarted: true,
		Verdict: VerdictInvalid, Reasons: []string{"loadgen cpu 0.75 > 0.70", "proxy restarted"},
		RawFile:          "raw/r0/waf/full-crs/json_1k/002.json.gz",
		AuditBytesPerReq: 2150.5, ProxyDiskWriteBytesPerS: 5_365_000,
		Transport:   plan.Transport{Protocol: plan.ProtocolH2, TLS: true},
		AttackCalls: 9, AttackMisses: 1, BenignBlocked: 2, ProxyCountSkewMs: 3.25,
		Intended: 49990, P50FirstFifthMs: 0.375, P50LastFifthMs: 0.5,
	}
}

func writeRows(t *testing.T, path string, rows ...StepRow) {
	t.Helper()
	w, err := OpenStepWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStepsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	rows := []StepRow{fullRow(0, "waf/full-crs/json_1k", 0), fullRow(1, "waf/full-crs/json_1k", 0)}
	rows[1].Reasons, rows[1].Verdict, rows[1].ProxyRestarted = nil, VerdictPass, false
	rows[1].Kind, rows[1].TargetRPS = "descend", 120 // a step below the ladder
	writeRows(t, path, rows[0])
	writeRows(t, path, rows[1]) // reopening appends without a second header
	got, err := ReadSteps(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, rows)
	}
}

// A step is judged on the figures steps.csv keeps: AsRecorded is what
// ReadSteps gives back, and recording it again changes nothing.
func TestAsRecordedIsAFixedPoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	row := fullRow(0, "waf/full-crs/json_1k", 0)
	row.P99Ms, row.CoresPer1k = 10.0000004, 0.123456789
	row.Verdict, row.Reasons, row.AttackMisses, row.BenignBlocked = VerdictPass, nil, 0, 0
	live := row.KneeStep()
	live.MaxP99Ms = 10
	if live.Passed() {
		t.Fatal("the unrounded step meets the objective: the case proves nothing")
	}
	recorded := AsRecorded(row)
	if recorded.P99Ms != 10 || recorded.CoresPer1k != 0.123457 {
		t.Errorf("recorded p99 %v, cores/1k %v: want the CSV's 10 and 0.123457", recorded.P99Ms, recorded.CoresPer1k)
	}
	st := recorded.KneeStep()
	st.MaxP99Ms = 10
	if !st.Passed() {
		t.Errorf("the recorded step fails a 10 ms objective that steps.csv says it meets")
	}
	writeRows(t, path, row)
	got, err := ReadSteps(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], recorded) || !reflect.DeepEqual(AsRecorded(recorded), recorded) {
		t.Errorf("read back %+v\nrecorded %+v", got, recorded)
	}
}

func TestStepsNotMeasuredRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	row := fullRow(0, "envoy/none/get", 0)
	row.ProxyRSSPeakMB, row.P999Ms = math.NaN(), math.NaN()
	row.Reasons = []string{"a;b", "line\nbreak"}
	writeRows(t, path, row)
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), ",3.5,0.25,0.03,,240.25,") {
		t.Errorf("NaN is not an empty cell: %s", data)
	}
	got, err := ReadSteps(path)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(got[0].ProxyRSSPeakMB) || !math.IsNaN(got[0].P999Ms) {
		t.Errorf("NaN read back as %g, %g", got[0].ProxyRSSPeakMB, got[0].P999Ms)
	}
	if want := []string{"a,b", "line break"}; !reflect.DeepEqual(got[0].Reasons, want) {
		t.Errorf("reasons = %q, want %q", got[0].Reasons, want)
	}
}

func TestStepWriterMakesEachRowVisibleAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	w, err := OpenStepWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 3 {
		if err := w.Write(fullRow(0, "waf/full-crs/json_1k", i)); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadSteps(path) // another handle, writer still open
		if err != nil || len(rows) != i+1 {
			t.Fatalf("after %d writes: %d rows, %v", i+1, len(rows), err)
		}
	}
}

func TestStepWriterRepairsTornTail(t *testing.T) {
	header := strings.Join(StepsHeader(), ",") + "\n"
	tests := []struct {
		name     string
		existing func(whole string) string
		wantRows int
	}{
		{"torn row", func(whole string) string { return whole + "sw-1,0,waf/full-c" }, 2},
		{"torn header", func(string) string { return header[:17] }, 1},
		{"empty file", func(string) string { return "" }, 1},
		{"clean file", func(whole string) string { return whole }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clean := filepath.Join(dir, "clean.csv")
			writeRows(t, clean, fullRow(0, "c", 0))
			whole, _ := os.ReadFile(clean)

			path := filepath.Join(dir, "steps.csv")
			if err := os.WriteFile(path, []byte(tt.existing(string(whole))), 0o644); err != nil {
				t.Fatal(err)
			}
			writeRows(t, path, fullRow(0, "c", 1))
			rows, err := ReadSteps(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != tt.wantRows || rows[len(rows)-1].Seq != 1 {
				t.Errorf("%d rows, last %+v", len(rows), rows[len(rows)-1])
			}
			data, _ := os.ReadFile(path)
			if strings.Count(string(data), "sweep_id,") != 1 || strings.Contains(string(data), "waf/full-c\n") {
				t.Errorf("file after repair:\n%s", data)
			}
		})
	}
}

func TestReadStepsIgnoresTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	writeRows(t, path, fullRow(0, "c", 0))
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("sw-1,0,c,waf")
	f.Close()
	rows, err := ReadSteps(path)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
}

func TestReadStepsErrors(t *testing.T) {
	header := strings.Join(StepsHeader(), ",")
	var good bytes.Buffer
	good.WriteString(header + "\n")
	line, _ := csvLine(stepSchema.encode(ptr(fullRow(0, "c", 0))))
	good.Write(line)
	tests := []struct {
		name string
		data string
		want string
	}{
		{"renamed column", strings.Replace(header, "target_rps", "rps", 1) + "\n", `line 1: header column 12 is "rps", want "target_rps"`},
		{"missing column", strings.TrimSuffix(header, ",raw_file,audit_bytes_per_req,proxy_disk_write_bytes_per_s,protocol,tls,attack_calls,attack_misses,benign_blocked,proxy_count_skew_ms,intended,p50_first_fifth_ms,p50_last_fifth_ms,cpu_steal_peak_share") + "\n", `line 1: header ends before column 50 "raw_file"`},
		{"bad number", good.String() + strings.Replace(string(line), ",2500,", ",fast,", 1), "line 3: column target_rps"},
		{"short row", good.String() + "sw-1,0,c\n", "line 3: 3 fields, want 62"},
		{"duplicate", good.String() + string(line), "line 3: duplicate step (round 0, config c, seq 0), first on line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "steps.csv")
			os.WriteFile(path, []byte(tt.data), 0o644)
			_, err := ReadSteps(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestStepWriterRefusesForeignHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	os.WriteFile(path, []byte("a,b,c\n1,2,3\n"), 0o644)
	if _, err := OpenStepWriter(path); err == nil || !strings.Contains(err.Error(), "header column 1") {
		t.Fatalf("err = %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// A steps.csv that an older wafsweep wrote with unrounded figures is
// re-encoded in the current form when a resumed sweep opens it: the same
// rows, rounded, in one atomic replacement.
func TestStepWriterReencodesOlderFormatting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	writeRows(t, path, fullRow(0, "c", 0))
	data, _ := os.ReadFile(path)
	old := strings.Replace(string(data), ",0.998319,", ",0.9983194622279129,", 1)
	if old == string(data) {
		t.Fatal("the fixture's completion is not in the file")
	}
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	writeRows(t, path, fullRow(0, "c", 1))
	data, _ = os.ReadFile(path)
	if strings.Contains(string(data), "0.9983194622279129") || strings.Count(string(data), ",0.998319,") != 2 {
		t.Fatalf("after reopening:\n%s", data)
	}
	if rows, err := ReadSteps(path); err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
}

// withoutAddedColumns is a steps.csv as a wafsweep before the added columns
// (audit_bytes_per_req, proxy_disk_write_bytes_per_s) wrote it.
func withoutAddedColumns(t *testing.T, rows ...StepRow) []byte {
	t.Helper()
	kept := slices.IndexFunc(stepSchema, func(c column[StepRow]) bool { return c.added })
	if kept < 0 {
		t.Fatal("steps.csv has no added column")
	}
	var b bytes.Buffer
	line, _ := csvLine(StepsHeader()[:kept])
	b.Write(line)
	for _, r := range rows {
		line, _ := csvLine(stepSchema.encode(&r)[:kept])
		b.Write(line)
	}
	return b.Bytes()
}

// A file of an older wafsweep ends before the added columns, so they must
// all come after every other column.
func TestAddedColumnsComeLast(t *testing.T) {
	check := func(name string, added []bool) {
		for i := 1; i < len(added); i++ {
			if added[i-1] && !added[i] {
				t.Errorf("%s: column %d is not added but follows an added one", name, i+1)
			}
		}
	}
	check("steps.csv", addedFlags(stepSchema))
	check("knees.csv", addedFlags(kneeSchema))
	check("slo_knees.csv", addedFlags(sloKneeSchema))
}

func addedFlags[T any](s schema[T]) []bool {
	flags := make([]bool, len(s))
	for i, c := range s {
		flags[i] = c.added
	}
	return flags
}

// Committed sweeps predate the added columns: they read whole, the added
// figures not measured.
func TestStepsWithoutTheAddedColumnsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	os.WriteFile(path, withoutAddedColumns(t, fullRow(0, "c", 0), fullRow(0, "c", 1)), 0o644)
	rows, err := ReadSteps(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !math.IsNaN(rows[1].AuditBytesPerReq) || !math.IsNaN(rows[1].ProxyDiskWriteBytesPerS) {
		t.Fatalf("rows %+v: want 2, added figures NaN", rows)
	}
	if r := rows[1]; r.Intended != -1 || !math.IsNaN(r.P50FirstFifthMs) || !math.IsNaN(r.P50LastFifthMs) {
		t.Errorf("intended %d, fifths %v %v: want -1 and NaN (not counted)", r.Intended, r.P50FirstFifthMs, r.P50LastFifthMs)
	}
	// Judged as before they were counted: completed/scheduled, no
	// growth check.
	if st := rows[1].KneeStep(); st.Completion() != float64(rows[1].Completed)/float64(rows[1].Scheduled) || !st.Sustained() {
		t.Errorf("an older row's completion %v (sustained %v), want completed/scheduled", st.Completion(), st.Sustained())
	}
	if h1 := (plan.Transport{Protocol: plan.ProtocolH1}); rows[1].Transport != h1 {
		t.Errorf("transport %+v, want %+v: every sweep before the columns was HTTP/1.1 in clear", rows[1].Transport, h1)
	}
	if want := fullRow(0, "c", 1); rows[1].RawFile != want.RawFile || rows[1].P99Ms != want.P99Ms {
		t.Errorf("row %+v, want the file's figures", rows[1])
	}
}

// Resuming such a sweep rewrites its steps.csv with every column first, so
// that the rows appended next match the header.
func TestStepWriterAddsTheAddedColumnsToAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	os.WriteFile(path, withoutAddedColumns(t, fullRow(0, "c", 0)), 0o644)
	writeRows(t, path, fullRow(0, "c", 1))
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), strings.Join(StepsHeader(), ",")+"\n") {
		t.Fatalf("header not rewritten:\n%s", data)
	}
	rows, err := ReadSteps(path)
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if !math.IsNaN(rows[0].AuditBytesPerReq) || rows[1].AuditBytesPerReq != 2150.5 {
		t.Errorf("audit bytes/req %v, %v: want NaN for the older row, 2150.5 for the new one", rows[0].AuditBytesPerReq, rows[1].AuditBytesPerReq)
	}
}

func TestServedRPSCountsOnlyAnswers(t *testing.T) {
	for _, c := range []struct {
		name string
		row  StepRow
		want float64
	}{
		{"all answered", StepRow{WindowS: 20, Completed: 20000}, 1000},
		// reference-json_10k's stock module offered 1,000 RPS: 404 calls
		// ended in the window, 355 of them by the client's timeout.
		{"timeouts are not served", StepRow{WindowS: 20.2, Completed: 404, SocketErrors: 355}, 49 / 20.2},
		{"errors are not served", StepRow{WindowS: 10, Completed: 1000, Non2xx: 100, SocketErrors: 50}, 85},
		{"no window", StepRow{Completed: 5}, math.NaN()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.row.ServedRPS()
			if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-c.want) > 1e-9) {
				t.Errorf("ServedRPS = %v, want %v", got, c.want)
			}
		})
	}
}

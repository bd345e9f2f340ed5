package dataset

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

func TestKneesHeaderIsTheDeclaredSchema(t *testing.T) {
	want := []string{
		"sweep_id", "round", "rounds", "config_id", "flavor", "tier", "shape",
		"knee_rps", "censored", "bound_rps", "invalid", "reasons", "confirmed", "confirm_flips", "lowest_fail_rps",
		"p50_ms_at_knee", "p99_ms_at_knee", "cores_per_1k_at_knee", "rss_peak_mb",
		"knee_vs_envoy", "added_p99_ms_vs_envoy",
		"knee_median_rps", "knee_min_rps", "knee_max_rps", "knee_stddev_rps", "rss_mb_at_knee",
		"audit_bytes_per_req_at_knee", "proxy_disk_write_bytes_per_s_at_knee", "protocol", "tls", "contested_by_rps",
		"cost_idle_cores", "cost_cores_per_1k", "cost_fit_rmse_cores", "cost_fit_steps", "cost_low_rps", "cost_high_rps",
	}
	if got := KneesHeader(); !reflect.DeepEqual(got, want) {
		t.Errorf("KneesHeader() = %v\nwant %v", got, want)
	}
}

func kneeRow(round int) KneeRow {
	return KneeRow{
		SweepID: "sw", Round: round, Rounds: 1, ConfigID: "waf/full-crs/get", Flavor: "waf", Tier: "full-crs", Shape: "get",
		KneeRPS: 3500, Censored: CensoredNone, Reasons: []string{"x"}, Confirmed: true, LowestFailRPS: 3750,
		P50MsAtKnee: 0.5, P99MsAtKnee: 2.5, CoresPer1kAtKnee: 0.125, RSSPeakMB: 150,
		KneeVsEnvoy: 0.5, AddedP99MsVsEnvoy: 1.25,
		KneeMedianRPS: 3500, KneeMinRPS: 3000, KneeMaxRPS: 4000, KneeStddevRPS: 500, RSSMBAtKnee: 140,
		AuditBytesPerReqAtKnee: 2150, ProxyDiskWriteBytesPerSAtKnee: 4_300_000,
		Transport: plan.Transport{Protocol: plan.ProtocolH2},
		Cost:      CostModel{IdleCores: 0.125, CoresPer1k: 0.6875, RMSECores: 0.0625, Steps: 12, LowRPS: 70, HighRPS: 1290},
	}
}

func TestKneesRoundTripAndAtomicReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "knees.csv")
	if err := WriteKnees(path, []KneeRow{kneeRow(0), kneeRow(1)}); err != nil {
		t.Fatal(err)
	}
	below := kneeRow(1)
	below.KneeRPS, below.Censored, below.BoundRPS, below.LowestFailRPS = 0, CensoredBelow, 50, 50
	rows := []KneeRow{kneeRow(0), below, kneeRow(AllRounds)}
	if err := WriteKnees(path, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadKnees(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, rows)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "\nsw,all,1,") {
		t.Errorf("aggregate round is not written as all:\n%s", data)
	}
	if !strings.Contains(string(data), ",0,below,50,false,") {
		t.Errorf("censoring bound not written after censored:\n%s", data)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", info.Mode().Perm())
	}
}

func TestKneesNaNRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "knees.csv")
	row := kneeRow(0)
	row.KneeVsEnvoy, row.KneeStddevRPS = math.NaN(), math.NaN()
	if err := WriteKnees(path, []KneeRow{row}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadKnees(path)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(got[0].KneeVsEnvoy) || !math.IsNaN(got[0].KneeStddevRPS) || got[0].KneeMaxRPS != 4000 {
		t.Errorf("got %+v", got[0])
	}
}

func TestReadKneesNamesTheBadLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "knees.csv")
	row := kneeRow(0)
	if err := WriteKnees(path, []KneeRow{row, row}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = strings.Replace(lines[2], ",true,", ",maybe,", 1)
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
	_, err := ReadKnees(path)
	if err == nil || !strings.Contains(err.Error(), "line 3: column confirmed") {
		t.Fatalf("err = %v", err)
	}
}

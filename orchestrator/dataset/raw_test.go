package dataset

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

func TestWriteRawGzip(t *testing.T) {
	dir := t.TempDir()
	body := []byte(`{"RunType":"HTTP","ActualQPS":999.5}`)
	rel := filepath.Join("raw", "r0", "waf", "001.json.gz")
	if err := WriteRawGzip(dir, rel, body); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	got, _ := io.ReadAll(zr)
	if !bytes.Equal(got, body) {
		t.Errorf("read back %q", got)
	}
	for _, bad := range []string{"../escape.json.gz", "/abs.json.gz", ""} {
		if err := WriteRawGzip(dir, bad, body); err == nil {
			t.Errorf("WriteRawGzip accepted %q", bad)
		}
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metadata.json")
	m := Metadata{
		SweepID:     "2025-01-02T03-04-05Z",
		StartedAt:   time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		CommandLine: []string{"wafsweep", "run", "--plan", "plan.json"},
		Plan:        plan.Default(),
		Versions:    Versions{Envoy: "1.40.0", Coraza: "v3.8.1", CRS: "v4.25.0", Go: "go1.26.8", WafsweepCommit: "abc123"},
		CPUModel:    "AMD EPYC", Cores: 2,
		CoreAssignment: map[string]string{"proxy": "0", "loadgen": "1"},
		Target:         TargetLocal,
		Notes:          []string{"cgroup v1"},
	}
	if err := WriteMetadata(path, m); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "finished_at") {
		t.Errorf("zero finished_at written:\n%s", data)
	}
	got, err := ReadMetadata(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
	}
}

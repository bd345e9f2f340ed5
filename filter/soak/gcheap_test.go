package soak

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
)

// gcTraceLine matches the heap sizes of a GODEBUG=gctrace=1 line,
// "185->186->118 MB": heap at the start and at the end of a collection, and
// the live (marked) heap it kept.
var gcTraceLine = regexp.MustCompile(`(?m)^gc \d+ @.* \d+->\d+->(\d+) MB`)

// logSize is the current length of Envoy's log, an offset to read from.
func logSize(p *proxy) int64 {
	info, err := os.Stat(p.envoy.LogPath())
	if err != nil {
		return 0
	}
	return info.Size()
}

// liveHeapsSince lists the live heap of each collection the module's Go
// runtime logged after offset in Envoy's log.
func liveHeapsSince(p *proxy, offset int64) ([]float64, error) {
	f, err := os.Open(p.envoy.LogPath())
	if err != nil {
		return nil, fmt.Errorf("read Envoy log for gctrace: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read Envoy log for gctrace: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read Envoy log for gctrace: %w", err)
	}
	return liveHeaps(data), nil
}

// liveHeaps lists the live heap of each gctrace line in log, in MB.
func liveHeaps(log []byte) []float64 {
	var heaps []float64
	for _, m := range gcTraceLine.FindAllSubmatch(log, -1) {
		if mb, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			heaps = append(heaps, mb)
		}
	}
	return heaps
}

package phrases

import (
	"runtime"
	"strings"
	"testing"
)

// The benchmarks compare the matcher with the library Coraza uses, on all
// of CRS's phrase files: live heap of the built automata, and the scan of
// a benign value none of the phrases is in (the common case).
//
//	go test -run '^$' -bench . ./filter/accel/phrases
func BenchmarkBuildCRS(b *testing.B) {
	files := crsPhraseFiles(b)
	b.Run("impl=phrases", func(b *testing.B) {
		reportHeap(b, func() any {
			var all []*Matcher
			for _, phrases := range files {
				m, err := New(phrases)
				if err != nil {
					b.Fatal(err)
				}
				all = append(all, m)
			}
			return all
		})
	})
	b.Run("impl=library", func(b *testing.B) {
		reportHeap(b, func() any {
			var all []any
			for _, phrases := range files {
				all = append(all, library(phrases, false))
			}
			return all
		})
	})
}

// reportHeap builds b.N times and reports the live heap one build keeps.
func reportHeap(b *testing.B, build func() any) {
	var before, after runtime.MemStats
	var kept any
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		kept = build()
		runtime.GC()
		runtime.ReadMemStats(&after)
	}
	runtime.KeepAlive(kept)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MB")
}

func BenchmarkScanBenign(b *testing.B) {
	files := crsPhraseFiles(b)
	phrases := files["@owasp_crs/lfi-os-files.data"]
	value := strings.Repeat(`{"customer":"Jane Roe","street":"12 Harbour Road","note":"leave at the door"},`, 13)
	m, err := New(phrases)
	if err != nil {
		b.Fatal(err)
	}
	ac := library(phrases, false)
	b.Run("impl=phrases", func(b *testing.B) {
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			if m.Contains(value) {
				b.Fatal("benign value matched")
			}
		}
	})
	b.Run("impl=library", func(b *testing.B) {
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			if ac.Iter(value).Next() != nil {
				b.Fatal("benign value matched")
			}
		}
	})
}

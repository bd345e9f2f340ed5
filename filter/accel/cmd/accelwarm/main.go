// Command accelwarm prepares the accelerated build's start-up ahead of
// time: it builds every rule tier in rulesets/ with acceleration on, which
// in a build with the corazawaf_hyperscan tag compiles the Hyperscan
// databases once and stores them in the cache the module reads
// ($CORAZAWAF_HS_CACHE, else the user's cache directory), so Envoy loads a
// serialized database in well under a second instead of compiling for tens
// of seconds on its main thread. `make build` runs it.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wafsweep/wafsweep/filter/waf"
)

type logger struct{}

func (logger) Log(_ waf.Level, msg string) { fmt.Println(msg) }
func (logger) Enabled(waf.Level) bool      { return true }

func main() {
	dir := "rulesets"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	tiers, err := filepath.Glob(filepath.Join(dir, "*.conf"))
	if err != nil || len(tiers) == 0 {
		fmt.Fprintf(os.Stderr, "accelwarm: no rule tiers in %s\n", dir)
		os.Exit(1)
	}
	for _, tier := range tiers {
		abs, err := filepath.Abs(tier)
		if err != nil {
			fmt.Fprintln(os.Stderr, "accelwarm:", err)
			os.Exit(1)
		}
		cfg, _ := json.Marshal(map[string]any{"directives": []string{"Include " + abs}, "acceleration": "prefilter"})
		start := time.Now()
		if _, err := waf.NewFilter(cfg, logger{}); err != nil {
			fmt.Fprintf(os.Stderr, "accelwarm: %s: %v\n", tier, err)
			os.Exit(1)
		}
		fmt.Printf("accelwarm: %s ready in %s\n", filepath.Base(tier), time.Since(start).Round(time.Millisecond))
	}
}

package crs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"github.com/coreruleset/go-ftw/v2/config"
	"github.com/coreruleset/go-ftw/v2/ftwhttp"
	"github.com/coreruleset/go-ftw/v2/output"
	"github.com/coreruleset/go-ftw/v2/runner"
	"github.com/coreruleset/go-ftw/v2/test"
	"github.com/coreruleset/go-ftw/v2/waflog"
	"github.com/rs/zerolog"
)

// loopback is the only address the suite may send traffic to: the CRS
// tests name their own dest_addr and port, and every one is overridden.
const loopback = "127.0.0.1"

// includeEnv narrows a local run to the test ids matching a regular
// expression, e.g. CRS_INCLUDE='^9201(00|80)-' (go-ftw's --include).
const includeEnv = "CRS_INCLUDE"

// debugEnv set to 1 turns on go-ftw's debug log (why a check failed, the
// raw requests and responses) on stderr.
const debugEnv = "CRS_FTW_DEBUG"

// newRunnerConfig points go-ftw at Envoy's listener and Envoy's log.
func newRunnerConfig(p *proxy) (*config.RunnerConfig, error) {
	cfg := config.NewDefaultConfig()
	cfg.LogFile = p.logPath
	addr, port, protocol := loopback, p.port, "http"
	cfg.TestOverride.Overrides.DestAddr = &addr
	cfg.TestOverride.Overrides.Port = &port
	cfg.TestOverride.Overrides.Protocol = &protocol
	rc := config.NewRunnerConfiguration(cfg)
	rc.ConnectTimeout = 3 * time.Second
	// go-ftw's 1 s default is short for a full-CRS transaction on a
	// shared 2-core machine; Coraza's own run uses 3 s as well.
	rc.ReadTimeout = 3 * time.Second
	if expr := os.Getenv(includeEnv); expr != "" {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("$%s: %w", includeEnv, err)
		}
		rc.Include = re
	}
	return rc, nil
}

// checkLoopbackOnly proves, before anything is sent, that every stage of
// every test goes to Envoy on 127.0.0.1 once the overrides are applied.
// Applying them writes the overridden values into the stages, which is what
// the runner does to each stage anyway.
func checkLoopbackOnly(rc *config.RunnerConfig, suite []*test.FTWTest, port int) error {
	for _, file := range suite {
		for _, tc := range file.Tests {
			for i := range tc.Stages {
				in := test.NewInput(&tc.Stages[i].Input)
				test.ApplyInputOverrides(rc, in)
				if in.GetDestAddr() != loopback || in.GetPort() != port || in.GetProtocol() != "http" {
					return fmt.Errorf("test %s stage %d would go to %s://%s:%d, not http://%s:%d",
						tc.IdString(), i, in.GetProtocol(), in.GetDestAddr(), in.GetPort(), loopback, port)
				}
			}
		}
	}
	return nil
}

// runOutcome is what one pass over the suite produced.
type runOutcome struct {
	stats *runner.RunStats
	// errors are test cases (by id) with a stage go-ftw could not finish
	// (no response, no log marker); the runner counts them nowhere.
	errors map[string]error
}

// runSuite runs the units of loadSuite one by one with go-ftw's runner.
// Calling RunTest per unit, rather than runner.Run over everything, keeps
// one unanswered request from aborting the remaining thousands.
func runSuite(rc *config.RunnerConfig, suite []*test.FTWTest) (runOutcome, error) {
	level := zerolog.ErrorLevel
	if os.Getenv(debugEnv) == "1" {
		level = zerolog.DebugLevel
	}
	// go-ftw logs through zerolog's global logger.
	zerolog.SetGlobalLevel(level)

	client, err := ftwhttp.NewClient(rc)
	if err != nil {
		return runOutcome{}, fmt.Errorf("creating go-ftw's HTTP client: %w", err)
	}
	logLines, err := waflog.NewFTWLogLines(rc)
	if err != nil {
		return runOutcome{}, fmt.Errorf("opening Envoy's log for go-ftw: %w", err)
	}
	defer logLines.Cleanup()
	ctx := &runner.TestRunContext{
		RunnerConfig: rc,
		Include:      rc.Include,
		Output:       output.NewOutput(string(output.Quiet), io.Discard),
		Stats:        runner.NewRunStats(),
		Client:       client,
		LogLines:     logLines,
	}
	out := runOutcome{stats: ctx.Stats, errors: map[string]error{}}
	for _, unit := range suite {
		err := runner.RunTest(ctx, unit)
		id := unit.Tests[0].IdString()
		if _, seen := out.errors[id]; err == nil || seen {
			continue
		}
		if err.Error() == "retry-once" {
			// go-ftw's plain error for a retry_once stage whose retry failed too.
			out.errors[id] = errors.New("failed, and failed again when retried once")
		} else {
			out.errors[id] = fmt.Errorf("not finished: %w", err)
		}
	}
	return out, nil
}

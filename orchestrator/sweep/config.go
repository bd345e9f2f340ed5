package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/precheck"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// idleWindow measures the proxy's own CPU use without load, subtracted
// from every step (cores per 1k RPS count what the traffic costs).
const idleWindow = 2 * time.Second

// configRun is one configuration in one round.
type configRun struct {
	*runner
	round  int
	cfg    plan.Config
	shape  plan.Shape
	search *knee.Search

	deployed   target.Deployed
	idleCPUPS  float64 // proxy CPU seconds per second when idle
	precheckOK error   // nil when the pre-check passed
}

func (c *configRun) run(ctx context.Context) (err error) {
	defer func() {
		if c.deployed != nil {
			err = errors.Join(err, c.deployed.Teardown())
		}
		if log := c.auditLog(); log != "" {
			err = errors.Join(err, keepAuditSample(log))
		}
		// What the configuration ran with stays, without the machine's
		// paths: the processes that needed them are gone.
		if _, statErr := os.Stat(c.runDir()); statErr == nil {
			err = errors.Join(err, dataset.MakePortable(c.runDir(), c.roots))
		}
	}()
	if err := c.deploy(ctx); err != nil {
		return err
	}
	for {
		rate, kind, sloMs, done, err := c.next()
		if done || err != nil {
			return err
		}
		row, members, err := c.step(ctx, rate, kind, sloMs)
		if err != nil {
			return err
		}
		if err := c.journal.Append(row, members...); err != nil {
			return err
		}
		if row.IsCapacity() {
			if err := c.search.Record(row.KneeStep()); err != nil {
				return err
			}
		}
		c.progress.stepDone(c.cfg, row)
		// A failed pre-check or a dead proxy is retried on a fresh deployment.
		if row.Verdict == dataset.VerdictInvalid && (c.precheckOK != nil || row.ProxyRestarted) {
			if err := c.redeploy(ctx); err != nil {
				return err
			}
		}
	}
}

// runBaselines measures the configuration at each rate once, outside its
// searches (dataset.KindBaseline); an invalid step is retried once.
func (c *configRun) runBaselines(ctx context.Context, rates []int) (err error) {
	defer func() {
		if c.deployed != nil {
			err = errors.Join(err, c.deployed.Teardown())
		}
	}()
	if err := c.deploy(ctx); err != nil {
		return err
	}
	for _, rate := range rates {
		for try := 0; try < 2; try++ {
			row, members, err := c.step(ctx, rate, dataset.KindBaseline, 0)
			if err != nil {
				return err
			}
			if err := c.journal.Append(row, members...); err != nil {
				return err
			}
			c.progress.stepDone(c.cfg, row)
			if row.Verdict != dataset.VerdictInvalid {
				break
			}
		}
	}
	return nil
}

func (c *configRun) runDir() string {
	return filepath.Join(c.opts.OutDir, "runs", fmt.Sprintf("r%d", c.round), c.cfg.Flavor, c.cfg.Tier, plan.PathName(c.cfg.Shape))
}

// deploy starts the configuration, pre-checks it and, when that passed,
// measures its idle CPU.
// Deployment errors end the sweep (the machine is not fit to measure); a
// failed pre-check only marks the configuration.
func (c *configRun) deploy(ctx context.Context) error {
	dir := c.runDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	wafJSON, err := c.wafConfig()
	if err != nil {
		return err
	}
	c.progress.note(fmt.Sprintf("deploying %s (round %d)", c.cfg.ID(), c.round))
	c.deployed, err = c.opts.Target.Deploy(ctx, target.Deployment{Config: c.cfg, WAFConfigJSON: wafJSON, RunDir: dir,
		Module: moduleOf(c.opts.Plan, c.cfg), AuditLog: c.auditLog(), Protocol: c.opts.Plan.Protocol, TLS: c.certs})
	if err != nil {
		return fmt.Errorf("deploying %s: %w", c.cfg.ID(), err)
	}
	checks, err := precheck.Checks(c.cfg)
	if err != nil {
		return err
	}
	c.precheckOK = precheck.Run(ctx, c.transportSpec(), checks)
	if c.precheckOK != nil {
		// Its steps send no load, so there is no idle CPU to subtract.
		c.progress.note(fmt.Sprintf("%s: %v", c.cfg.ID(), c.precheckOK))
		return nil
	}
	c.idleCPUPS, err = c.measureIdle(ctx)
	return err
}

func (c *configRun) redeploy(ctx context.Context) error {
	if c.deployed != nil {
		if err := c.deployed.Teardown(); err != nil {
			return err
		}
		c.deployed = nil
	}
	if _, _, _, done, err := c.next(); done || err != nil {
		return err
	}
	return c.deploy(ctx)
}

// next is the step the configuration wants: the capacity search's, then
// its SLO searches' (sloMs > 0; see dataset.SLOSearches), which the journal
// replays on resume like the capacity search.
func (c *configRun) next() (rate int, kind knee.Kind, sloMs float64, done bool, err error) {
	if rate, kind, done := c.search.Next(); !done {
		return rate, kind, 0, false, nil
	}
	_, pending, err := dataset.SLOSearches(c.journal.Steps(c.round, c.cfg.ID()), c.search.Result(), dataset.ObjectivesOf(c.opts.Plan), c.opts.Plan.KneeOptions())
	if err != nil {
		return 0, "", 0, true, fmt.Errorf("%s round %d: %w", c.cfg.ID(), c.round, err)
	}
	if pending == nil {
		return 0, "", 0, true, nil
	}
	rate, kind, _ = pending.Search.Next()
	return rate, kind, pending.SLOMs, false, nil
}

func (c *configRun) measureIdle(ctx context.Context) (float64, error) {
	before, err := c.deployed.Usage()
	if err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(idleWindow):
	}
	after, err := c.deployed.Usage()
	if err != nil {
		return 0, err
	}
	return (after.ProxyCPUSeconds - before.ProxyCPUSeconds) / idleWindow.Seconds(), nil
}

// wafConfig is the WAF's filter_config for the configuration's tier.
func (c *configRun) wafConfig() (string, error) {
	return WAFConfig(c.opts.Plan, c.cfg, c.opts.RulesetsDir, c.auditLog())
}

// WAFConfig is the filter_config a WAF configuration gets: the module
// flavor's, from its spec, or corazawaf's, which includes the tier's rule
// file and names the audit log when there is one (and which nginx's
// flavor translates for ModSecurity). Flavors without a WAF get "".
func WAFConfig(p plan.Plan, cfg plan.Config, rulesetsDir, auditLog string) (string, error) {
	if !plan.HasWAF(cfg.Flavor) {
		return "", nil
	}
	tierFile := filepath.Join(rulesetsDir, cfg.Tier+".conf")
	if spec, ok := p.Module(cfg.Flavor); ok {
		if _, err := os.Stat(tierFile); err != nil && !spec.HasTierConfig(cfg.Tier) {
			return "", fmt.Errorf("tier %s: %w", cfg.Tier, err)
		}
		return spec.FilterConfig(moduleflavor.Values{Tier: cfg.Tier, TierFile: tierFile, Rulesets: rulesetsDir})
	}
	if cfg.Tier == plan.TierModuleOff {
		return `{"mode":"off"}`, nil
	}
	if _, err := os.Stat(tierFile); err != nil {
		return "", fmt.Errorf("tier %s: %w", cfg.Tier, err)
	}
	waf := map[string]any{"directives": []string{"Include " + tierFile}}
	if auditLog != "" {
		waf["audit_log"] = auditLog
		waf["audit_engine"] = "On" // every transaction, not only the relevant ones
	}
	b, err := json.Marshal(waf)
	return string(b), err
}

// auditSampleBytes bounds what a run directory keeps of its audit log.
const auditSampleBytes = 64 << 10

// keepAuditSample replaces a configuration's audit log, once its proxy is
// gone, by its first whole records (one JSON object per line, Coraza's and
// ModSecurity's alike) up to auditSampleBytes, in AuditSampleFile beside
// it: at a few hundred requests per second the whole log grows by hundreds
// of megabytes per configuration, and the steps already hold its size per
// request. No log (nothing was logged) is no error.
func keepAuditSample(log string) error {
	f, err := os.Open(log)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit log sample: %w", err)
	}
	defer f.Close()
	head := make([]byte, auditSampleBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("audit log sample: %w", err)
	}
	head = head[:n]
	if n == auditSampleBytes {
		head = head[:bytes.LastIndexByte(head, '\n')+1] // whole records only
	}
	sample := filepath.Join(filepath.Dir(log), AuditSampleFile)
	if err := os.WriteFile(sample, head, 0o644); err != nil {
		return fmt.Errorf("audit log sample: %w", err)
	}
	return os.Remove(log)
}

// auditLog is where the configuration writes its audit log, "" when it
// writes none (see plan.Plan.Audits).
func (c *configRun) auditLog() string {
	if !c.opts.Plan.Audits(c.cfg) {
		return ""
	}
	return filepath.Join(c.runDir(), "audit.log")
}

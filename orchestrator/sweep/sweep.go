package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/report"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/tlscert"
)

// Options is everything a sweep needs.
type Options struct {
	Plan    plan.Plan
	Target  target.Target
	SweepID string
	// Identity digests what shapes the numbers (plan, target, CPUs or
	// cluster, builds); a resume with another is refused. Empty: unchecked.
	Identity string
	// OutDir is results/<sweep-id>.
	OutDir string
	// RulesetsDir holds the tier files (rulesets/<tier>.conf).
	RulesetsDir string
	CommandLine []string
	Versions    dataset.Versions
	// Progress receives one line per step with an ETA (nil: discarded).
	Progress io.Writer
	// Host is the Host header of every request (a name: CRS 920350 flags
	// numeric hosts).
	Host string
	// CPUProbe is how long to probe the proxy's CPU before the sweep
	// starts or resumes (0: cpuprobe.DefaultDuration).
	CPUProbe time.Duration
}

// File names inside OutDir (the datasets' are package dataset's, which
// reads them back).
const (
	StepsFile    = dataset.StepsFile
	KneesFile    = dataset.KneesFile
	SLOKneesFile = dataset.SLOKneesFile
	MetadataFile = dataset.MetadataFile
	ReportFile   = "report.md"
	// AuditSampleFile is what a run directory keeps of its audit log (see
	// keepAuditSample).
	AuditSampleFile = "audit-sample.log"
)

// Run runs (or resumes) the sweep. On cancellation it stops the step in
// progress without recording it, tears down what it deployed, rebuilds the
// outputs from the finished steps and returns the context's error.
func Run(ctx context.Context, opts Options) error {
	if err := opts.Plan.Validate(); err != nil {
		return fmt.Errorf("invalid plan: %w", err)
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Host == "" {
		opts.Host = "wafsweep.test"
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return err
	}
	roots := machineRoots(opts.OutDir, opts.Plan.Modules)
	opts.CommandLine = slices.Clone(opts.CommandLine)
	for i, arg := range opts.CommandLine {
		opts.CommandLine[i] = dataset.PortableText(arg, roots)
	}
	// The metadata first: it says whether steps.csv is of a schema this
	// sweep can resume.
	meta, err := startMetadata(ctx, opts)
	if err != nil {
		return err
	}
	journal, err := dataset.OpenJournal(filepath.Join(opts.OutDir, StepsFile))
	if err != nil {
		return err
	}
	defer journal.Close()
	r := &runner{opts: opts, journal: journal, meta: meta, progress: newProgress(opts.Plan, journal, opts.Progress), roots: roots}
	if opts.Plan.TLS {
		release, err := r.makeCerts()
		if err != nil {
			return err
		}
		defer release()
	}
	runErr := r.rounds(ctx)
	if err := r.writeOutputs(runErr == nil); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

type runner struct {
	opts     Options
	journal  *dataset.Journal
	meta     dataset.Metadata
	progress *progress
	roots    []dataset.PathRoot // the machine's paths, kept out of the dataset
	certs    *tlscert.Files     // the run's certificate, when the plan has TLS
}

// makeCerts makes the run's certificate in a temporary directory, never in
// the dataset: its private key is worth nothing beyond the run, and it
// goes with the returned release.
func (r *runner) makeCerts() (release func(), err error) {
	dir, err := os.MkdirTemp("", "wafsweep-tls-")
	if err != nil {
		return nil, fmt.Errorf("the run's TLS certificate: %w", err)
	}
	files, err := tlscert.Generate(dir, tlscert.Loopback(r.opts.Host))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r.certs = &files
	return func() { os.RemoveAll(dir) }, nil
}

// machineRoots are the paths of this machine that the dataset's files
// must not name (see dataset.MakePortable). The repository is the one the
// sweep runs from, when it does; a module flavor's library and spec lie
// anywhere, and are named by the flavor.
func machineRoots(outDir string, modules []moduleflavor.Spec) []dataset.PathRoot {
	repo, err := envoyproc.RepoRoot()
	if err != nil {
		repo = ""
	}
	roots := dataset.MachineRoots(outDir, repo)
	for _, m := range modules {
		roots = dataset.AddRoot(roots, dataset.PathRoot{Path: filepath.Dir(m.LibraryPath), Placeholder: "<module " + m.Name + ">"})
		if m.SpecPath != "" {
			roots = dataset.AddRoot(roots, dataset.PathRoot{Path: filepath.Dir(m.SpecPath), Placeholder: "<module spec " + m.Name + ">"})
		}
	}
	return roots
}

func (r *runner) rounds(ctx context.Context) error {
	for round := range r.opts.Plan.Rounds {
		for _, cfg := range r.opts.Plan.ConfigsForRound(round) {
			if err := r.config(ctx, round, cfg); err != nil {
				return err
			}
			if err := r.writeOutputs(false); err != nil {
				return err
			}
		}
		if err := r.baselines(ctx, round); err != nil {
			return err
		}
	}
	return nil
}

// baselines runs vanilla Envoy, after a round's searches, at the rates the
// round's WAF configurations report and Envoy's search did not visit, so
// that every reported row's added latency compares equal rates.
func (r *runner) baselines(ctx context.Context, round int) error {
	if !slices.Contains(r.opts.Plan.Flavors, plan.FlavorEnvoy) {
		return nil
	}
	for _, shapeName := range r.opts.Plan.Shapes {
		rates, err := dataset.BaselineRates(r.journal.Rows(), round, shapeName, r.opts.Plan.Ladder, r.kneeOptions(), dataset.ObjectivesOf(r.opts.Plan))
		if err != nil {
			return err
		}
		if len(rates) == 0 {
			continue // Envoy's own search visited them all; the next shape may still need some
		}
		shape, err := plan.ShapeByName(shapeName)
		if err != nil {
			return err
		}
		cfg := plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: shapeName}
		c := &configRun{runner: r, round: round, cfg: cfg, shape: shape}
		if err := c.runBaselines(ctx, rates); err != nil {
			return err
		}
		if err := r.writeOutputs(false); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) kneeOptions() knee.Options {
	return r.opts.Plan.KneeOptions()
}

// config runs one configuration's knee search, resuming from the journal.
func (r *runner) config(ctx context.Context, round int, cfg plan.Config) error {
	search, err := knee.Replay(r.opts.Plan.Ladder, r.kneeOptions(), r.journal.KneeSteps(round, cfg.ID()))
	if err != nil {
		return fmt.Errorf("%s round %d: the recorded steps do not replay (was the plan changed? use a new --sweep-id): %w", cfg.ID(), round, err)
	}
	shape, err := plan.ShapeByName(cfg.Shape)
	if err != nil {
		return err
	}
	c := &configRun{runner: r, round: round, cfg: cfg, shape: shape, search: search}
	if _, _, _, done, err := c.next(); done || err != nil {
		return err
	}
	return c.run(ctx)
}

// writeOutputs rebuilds knees.csv, the plots, report.md and metadata.json
// from steps.csv.
func (r *runner) writeOutputs(finished bool) error {
	steps := r.journal.Rows()
	derived, err := dataset.Derive(steps, r.opts.Plan)
	if err != nil {
		return err
	}
	if err := derived.Write(r.opts.OutDir); err != nil {
		return err
	}
	if finished {
		r.meta.FinishedAt = time.Now().UTC()
	}
	if err := dataset.WriteMetadata(filepath.Join(r.opts.OutDir, MetadataFile), r.meta); err != nil {
		return err
	}
	return report.Generate(r.opts.OutDir, steps, derived, r.meta)
}

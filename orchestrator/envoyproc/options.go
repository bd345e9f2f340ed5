package envoyproc

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/childproc"
)

// Default values used when the matching Options field is zero.
const (
	DefaultLogLevel     = "warning"
	DefaultStartTimeout = 30 * time.Second
	DefaultStopGrace    = 10 * time.Second
)

var logLevels = map[string]bool{
	"trace": true, "debug": true, "info": true, "warning": true, "warn": true,
	"error": true, "critical": true, "off": true,
}

// Options describes one Envoy process.
type Options struct {
	// Binary is the Envoy executable; empty means FindBinary().
	Binary string
	// ConfigPath is the bootstrap file (-c).
	ConfigPath string
	// LogPath receives Envoy's stdout and stderr (truncated at start). It is
	// a redirect rather than --log-path so that crashes and Go panics from a
	// dynamic module, which bypass Envoy's logger, land in the same file.
	LogPath string
	// Concurrency is the number of worker threads; 0 means len(CPUs), or 1
	// when CPUs is empty.
	Concurrency int
	// BaseID separates the shared-memory names of concurrent Envoys; 0 means
	// AdminPort, which is unique among running instances by construction.
	BaseID int
	// LogLevel is Envoy's -l; default "warning" keeps the hot path quiet.
	LogLevel string
	// ComponentLogLevel is --component-log-level, e.g. "dynamic_modules:debug".
	ComponentLogLevel string
	// CPUs, if set, pins Envoy (all its threads) to these CPU numbers.
	CPUs []int
	// Env is appended to this process's environment for Envoy, e.g.
	// "ENVOY_DYNAMIC_MODULES_SEARCH_PATH=/dir".
	Env []string
	// AdminPort is the admin port written in the bootstrap; Start polls its
	// /ready.
	AdminPort int
	// FileFlushInterval is --file-flush-interval-msec: how often Envoy
	// writes buffered access-log lines to disk. 0 keeps Envoy's default of
	// 10 s; a test reading the access log wants ~100 ms.
	FileFlushInterval time.Duration
	// StartTimeout bounds the wait for /ready; default 30 s.
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL;
	// default 10 s.
	StopGrace time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Binary == "" {
		bin, err := FindBinary()
		if err != nil {
			return o, err
		}
		o.Binary = bin
	}
	if o.Concurrency == 0 {
		o.Concurrency = max(len(o.CPUs), 1)
	}
	if o.BaseID == 0 {
		o.BaseID = o.AdminPort
	}
	if o.LogLevel == "" {
		o.LogLevel = DefaultLogLevel
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopGrace == 0 {
		o.StopGrace = DefaultStopGrace
	}
	return o, nil
}

func (o Options) validate() error {
	var errs []error
	if o.ConfigPath == "" {
		errs = append(errs, errors.New("ConfigPath is empty"))
	}
	if o.LogPath == "" {
		errs = append(errs, errors.New("LogPath is empty: Envoy's output must go somewhere readable"))
	}
	if o.AdminPort < 1 || o.AdminPort > 65535 {
		errs = append(errs, fmt.Errorf("AdminPort %d out of range 1-65535", o.AdminPort))
	}
	if o.Concurrency < 0 || o.BaseID < 0 || o.StartTimeout < 0 || o.StopGrace < 0 || o.FileFlushInterval < 0 {
		errs = append(errs, errors.New("Concurrency, BaseID, FileFlushInterval, StartTimeout and StopGrace must not be negative"))
	}
	if o.LogLevel != "" && !logLevels[o.LogLevel] {
		errs = append(errs, fmt.Errorf("LogLevel %q is not one of trace, debug, info, warning, error, critical, off", o.LogLevel))
	}
	for _, cpu := range o.CPUs {
		if !childproc.ValidCPU(cpu) {
			errs = append(errs, fmt.Errorf("CPU %d out of range", cpu))
		}
	}
	return errors.Join(errs...)
}

// args is Envoy's command line. Hot restart is disabled: every sweep step
// owns a fresh process, and it removes the shared-memory segment that
// concurrent instances could otherwise collide on.
func (o Options) args() []string {
	args := []string{
		"-c", o.ConfigPath,
		"--concurrency", strconv.Itoa(o.Concurrency),
		"--base-id", strconv.Itoa(o.BaseID),
		"-l", o.LogLevel,
		"--disable-hot-restart",
	}
	if o.FileFlushInterval > 0 {
		args = append(args, "--file-flush-interval-msec", strconv.FormatInt(max(o.FileFlushInterval.Milliseconds(), 1), 10))
	}
	if o.ComponentLogLevel != "" {
		args = append(args, "--component-log-level", o.ComponentLogLevel)
	}
	return args
}

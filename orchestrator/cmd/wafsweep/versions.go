package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/wafsweep/wafsweep/filter/accel/linkage"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// versions records what produced the numbers.
func versions(module string) dataset.Versions {
	v := dataset.Versions{Go: runtime.Version(), Module: fileDigest(module), Envoy: envoyVersion()}
	// Coraza and the CRS are linked into the module, not into wafsweep:
	// read them from the module's own build information.
	if info, err := buildinfo.ReadFile(module); err == nil {
		for _, dep := range info.Deps {
			switch dep.Path {
			case "github.com/corazawaf/coraza/v3":
				v.Coraza = dep.Version
			case "github.com/corazawaf/coraza-coreruleset/v4":
				v.CRS = dep.Version
			}
		}
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				v.WafsweepCommit = s.Value
			}
		}
	}
	if v.WafsweepCommit == "" {
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			v.WafsweepCommit = strings.TrimSpace(string(out))
		}
	}
	return v
}

// planVersions adds, to versions of the stock module, the digests of the
// accelerated build (and the engine it links) and of the no-op module when
// a flavor of the plan loads them.
func planVersions(p plan.Plan, modules interface{ ModulePath(flavor string) string }) dataset.Versions {
	v := versions(modules.ModulePath(plan.FlavorWAF))
	if slices.Contains(p.Flavors, plan.FlavorWAFAccelerated) {
		accelerated := modules.ModulePath(plan.FlavorWAFAccelerated)
		v.ModuleAccelerated, v.ModuleAcceleratedEngine = fileDigest(accelerated), engineOf(accelerated)
	}
	if slices.Contains(p.Flavors, plan.FlavorEnvoyNoopModule) {
		v.ModuleNoop = fileDigest(modules.ModulePath(plan.FlavorEnvoyNoopModule))
	}
	return v
}

var envoyVersionPattern = regexp.MustCompile(`version: (\S+)`)

func envoyVersion() string {
	bin, err := envoyproc.FindBinary()
	if err != nil {
		return "unknown"
	}
	out, err := exec.Command(bin, "--version").Output()
	if m := envoyVersionPattern.FindSubmatch(out); err == nil && m != nil {
		return string(m[1])
	}
	return "unknown"
}

// engineOf is the engine a build of the accelerated module links, or why
// it cannot be read.
func engineOf(module string) string {
	l, err := linkage.Of(module)
	if err != nil {
		return "unreadable"
	}
	return l.String()
}

// fileDigest identifies a module build: sha256 prefix of the file.
func fileDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "missing"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable"
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}

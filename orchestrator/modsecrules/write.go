package modsecrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"

	"github.com/wafsweep/wafsweep/filter/waf"
)

// MainFileName is the file nginx's modsecurity_rules_file names.
const MainFileName = "modsecurity.conf"

// maxIncludeDepth bounds nested local includes: deeper is a cycle.
const maxIncludeDepth = 16

// FilterConfig is the part of a corazawaf filter_config that says what to
// inspect: what ModSecurity can be given too.
type FilterConfig struct {
	Directives  []string `json:"directives"`
	Mode        string   `json:"mode"`         // block (default), detect or off
	AuditLog    string   `json:"audit_log"`    // JSON audit log file
	AuditEngine string   `json:"audit_engine"` // RelevantOnly (default) or On
}

// ParseFilterConfig decodes a corazawaf filter_config. Fields about how
// Envoy answers (failure_mode, deny_response, metadata, ...) have no nginx
// counterpart and are refused rather than silently ignored.
func ParseFilterConfig(data []byte) (FilterConfig, error) {
	var c FilterConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("modsecrules: filter configuration (only directives, mode, audit_log and audit_engine translate to ModSecurity): %w", err)
	}
	return c, c.validate()
}

func (c FilterConfig) validate() error {
	var errs []error
	switch c.Mode {
	case "", "block", "detect", "off":
	default:
		errs = append(errs, fmt.Errorf("mode %q: use block, detect or off", c.Mode))
	}
	switch {
	case c.AuditEngine != "" && c.AuditLog == "":
		errs = append(errs, errors.New("audit_engine without audit_log"))
	case c.AuditEngine != "" && c.AuditEngine != "RelevantOnly" && c.AuditEngine != "On":
		errs = append(errs, fmt.Errorf("audit_engine %q: use RelevantOnly or On", c.AuditEngine))
	}
	if c.AuditLog != "" {
		errs = append(errs, checkPath("audit_log", c.AuditLog))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("modsecrules: %w", err)
	}
	return nil
}

// checkPath refuses paths ModSecurity's rule parser would cut short.
func checkPath(what, p string) error {
	if strings.ContainsAny(p, " \t\n\"'@\\") {
		return fmt.Errorf("%s %q: ModSecurity's rule parser ends a path at whitespace, quotes, '\\' and '@': use a directory without them", what, p)
	}
	return nil
}

// Ruleset is a rule set written for ModSecurity.
type Ruleset struct {
	// MainFile is the file to give nginx's modsecurity_rules_file.
	MainFile string
	// Changes lists the directives left out or rewritten, with the reason
	// of each.
	Changes []Change
}

// Write translates cfg into dir: MainFile, a crs/ directory holding the
// extracted CRS when the directives include it, and included/ holding
// translated copies of local files they include. Relative includes in the
// directives resolve against the working directory, as in the module.
func Write(dir string, cfg FilterConfig) (Ruleset, error) {
	if err := cfg.validate(); err != nil {
		return Ruleset{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Ruleset{}, fmt.Errorf("modsecrules: %w", err)
	}
	if err := checkPath("rule directory", abs); err != nil {
		return Ruleset{}, fmt.Errorf("modsecrules: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return Ruleset{}, fmt.Errorf("modsecrules: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return Ruleset{}, fmt.Errorf("modsecrules: %w", err)
	}
	w := newWriter(abs)
	body, err := w.translate(strings.Join(cfg.Directives, "\n"), "directives", cwd, 0)
	if err != nil {
		return Ruleset{}, err
	}
	main := filepath.Join(abs, MainFileName)
	if err := os.WriteFile(main, []byte(w.mainFile(body, cfg)), 0o644); err != nil {
		return Ruleset{}, fmt.Errorf("modsecrules: %w", err)
	}
	return Ruleset{MainFile: main, Changes: w.changes}, nil
}

// mainFile frames the translated directives the way the corazawaf module
// frames them for Coraza (filter/waf: engine.go).
func (w *writer) mainFile(body string, cfg FilterConfig) string {
	var b strings.Builder
	b.WriteString("# Written by wafsweep (package modsecrules) for libmodsecurity3 from a\n")
	b.WriteString("# corazawaf filter configuration: the same rules, with the changes below.\n")
	for _, c := range w.changes {
		if c.Became == "" {
			fmt.Fprintf(&b, "# dropped from %s: %s\n#   because %s\n", c.Source, c.Directive, c.Reason)
		} else {
			fmt.Fprintf(&b, "# rewritten in %s: %s\n#   as %s\n#   because %s\n", c.Source, c.Directive, c.Became, c.Reason)
		}
	}
	b.WriteString("\n# As the module: no audit log unless the configuration asks for one.\nSecAuditEngine Off\n\n")
	b.WriteString(body)
	switch cfg.Mode {
	case "detect":
		b.WriteString("\nSecRuleEngine DetectionOnly\n\n")
	case "off":
		b.WriteString("\nSecRuleEngine Off\n\n")
	}
	if cfg.AuditLog != "" {
		engine := cfg.AuditEngine
		if engine == "" {
			engine = "RelevantOnly"
		}
		fmt.Fprintf(&b, "\nSecAuditEngine %s\n\nSecAuditLogType Serial\n\nSecAuditLogFormat JSON\n\nSecAuditLog %s\n\n", engine, cfg.AuditLog)
	}
	return b.String()
}

func newWriter(dir string) *writer {
	return &writer{dir: dir, included: map[string]string{}, embedded: waf.NewRulesFS()}
}

// writer translates SecLang text and the files it includes.
type writer struct {
	dir      string
	crsDir   string            // set once the CRS data files are extracted
	included map[string]string // included file or @name -> its translated copy
	// embedded resolves @names as the corazawaf module does.
	embedded  waf.RulesFS
	changes   []Change
	nIncluded int
	// argumentsLimit is the SecArgumentsLimit in force so far; 0 until the
	// rule set or a rewrite sets one.
	argumentsLimit int
}

// translate rewrites Include lines and the constructs ModSecurity lacks,
// drops what it refuses, and ends every directive with a blank line (see
// the package comment).
func (w *writer) translate(text, source, baseDir string, depth int) (string, error) {
	var out strings.Builder
	for _, d := range splitDirectives(text) {
		switch {
		case d.name == "":
			out.WriteString(d.lines[0] + "\n")
		case strings.EqualFold(d.name, "Include"):
			paths, err := w.include(unquote(d.args()), baseDir, depth)
			if err != nil {
				return "", fmt.Errorf("modsecrules: %s: %s: %w", source, d.text(), err)
			}
			for _, p := range paths {
				fmt.Fprintf(&out, "Include %s\n\n", p)
			}
		case dropReason(d.name) != "":
			reason := dropReason(d.name)
			w.changes = append(w.changes, Change{Source: source, Directive: d.text(), Reason: reason})
			fmt.Fprintf(&out, "# wafsweep dropped for ModSecurity: %s\n#   because %s\n\n", d.text(), reason)
		case strings.EqualFold(d.name, "SecArgumentsLimit"):
			if n, err := strconv.Atoi(d.args()); err == nil {
				w.argumentsLimit = n
			}
			out.WriteString(strings.Join(d.lines, "\n") + "\n\n")
		case isArgumentsLimitRule(d):
			out.WriteString(w.rewriteArgumentsLimitRule(d, source))
		default:
			out.WriteString(strings.Join(d.lines, "\n") + "\n\n")
		}
	}
	return out.String(), nil
}

// include returns the translated files an Include names.
func (w *writer) include(name, baseDir string, depth int) ([]string, error) {
	if i := strings.IndexByte(name, '@'); i >= 0 {
		// As the module's RulesFS: an embedded name may arrive behind a
		// directory ("dir/@owasp_crs/x.conf"); only the part from '@' counts.
		return w.includeEmbedded(name[i:], depth)
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(baseDir, name)
	}
	matches, err := filepath.Glob(name)
	if err != nil {
		return nil, err
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("%s: no such file", name)
	}
	var out []string
	for _, m := range matches {
		p, err := w.includeLocal(m, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// includeEmbedded resolves a name the way the corazawaf module does
// (waf.NewRulesFS: the module's own @coraza.conf and @crs-setup.conf, then
// coraza-coreruleset), so both WAFs load the same text, and returns the
// translated copies.
func (w *writer) includeEmbedded(name string, depth int) ([]string, error) {
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("includes nested deeper than %d (a cycle?) at %s", maxIncludeDepth, name)
	}
	matches, err := w.embedded.Glob(name)
	if err != nil {
		return nil, err
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("%s: not an embedded rule file (@coraza.conf, @crs-setup.conf, @owasp_crs/...)", name)
	}
	if err := w.extractCRSData(); err != nil {
		return nil, err
	}
	out := make([]string, len(matches))
	for i, m := range matches {
		if out[i], err = w.translateEmbedded(m, depth); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// translateEmbedded writes the translated copy of one embedded rule file
// under crs/, once.
func (w *writer) translateEmbedded(name string, depth int) (string, error) {
	if p, ok := w.included[name]; ok {
		return p, nil
	}
	data, err := w.embedded.ReadFile(name)
	if err != nil {
		return "", err
	}
	text, err := w.translate(string(data), name, "", depth+1)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(w.crsDir, filepath.FromSlash(extractedName(name)))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(dst, []byte(text), 0o644); err != nil {
		return "", err
	}
	w.included[name] = dst
	return dst, nil
}

// extractedName drops the '@' of the embedded names (see the package
// comment): "@owasp_crs/x.conf" becomes "owasp_crs/x.conf".
func extractedName(name string) string {
	return strings.ReplaceAll(name, "@", "")
}

func (w *writer) includeLocal(file string, depth int) (string, error) {
	if depth > maxIncludeDepth {
		return "", fmt.Errorf("includes nested deeper than %d (a cycle?) at %s", maxIncludeDepth, file)
	}
	if p, ok := w.included[file]; ok {
		return p, nil
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	translated, err := w.translate(string(text), file, filepath.Dir(file), depth)
	if err != nil {
		return "", err
	}
	w.nIncluded++
	dst := filepath.Join(w.dir, "included", fmt.Sprintf("%02d-%s", w.nIncluded, filepath.Base(file)))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	header := fmt.Sprintf("# Translated by wafsweep for ModSecurity from %s\n\n", file)
	if err := os.WriteFile(dst, []byte(header+translated), 0o644); err != nil {
		return "", err
	}
	w.included[file] = dst
	return dst, nil
}

// extractCRSData copies coraza-coreruleset's data files (read by
// @pmFromFile relative to the rule file's directory) and licence into
// dir/crs once. Rule files are translated when an Include names them.
func (w *writer) extractCRSData() error {
	if w.crsDir != "" {
		return nil
	}
	root := filepath.Join(w.dir, "crs")
	err := fs.WalkDir(coreruleset.FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || isRuleFile(name) {
			return err
		}
		data, err := fs.ReadFile(coreruleset.FS, name)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, filepath.FromSlash(extractedName(name)))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("modsecrules: extracting the CRS into %s: %w", root, err)
	}
	w.crsDir = root
	return nil
}

func isRuleFile(name string) bool {
	base := path.Base(name)
	return strings.HasSuffix(base, ".conf") || base == "@coraza.conf-recommended" || base == "@crs-setup.conf.example"
}

// CRSVersion is the version of coraza-coreruleset compiled into this
// binary, the CRS that Write extracts.
func CRSVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/corazawaf/coraza-coreruleset/v4" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

// Package moduleflavor makes any Envoy dynamic module a sweep flavor. A
// spec file says what Envoy loads (the library, its module and filter
// names), the filter config each tier gets, and what the module needs in
// Envoy's environment; Load reads it, checks it and digests the library,
// and Config renders a tier's filter config.
//
// A spec file is JSON:
//
//	{
//	  "library": "libcomposer.so",
//	  "module_name": "composer",
//	  "filter_name": "coraza-waf",
//	  "config": {"directives": ["Include ${TIER_FILE}"], "mode": "REQUEST_ONLY"},
//	  "env": ["GODEBUG=cgocheck=0"]
//	}
//
// library is the module file, relative to the spec's directory or
// absolute. config is the filter config of every tier, any JSON value, in
// which each string may name ${TIER} (the tier's name), ${TIER_FILE} (the
// absolute path of the tier's rule file, rulesets/TIER.conf) and
// ${RULESETS} (their directory); tier_configs overrides it per tier, and
// is the only way to give a module the module-off tier. config_type is how
// Envoy wraps the config for the module: "string" (a
// google.protobuf.StringValue holding the JSON, the default) or "struct"
// (a google.protobuf.Struct; config must then be an object). env is added
// to Envoy's environment when it runs this flavor, NAME=VALUE each.
package moduleflavor

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/internal/envvars"
)

// Config types: how Envoy wraps the filter config for the module.
const (
	ConfigString = "string"
	ConfigStruct = "struct"
)

// Spec is a module flavor: what a spec file says, with the library's
// digest. Its JSON form is part of a sweep's plan, so of its identity: the
// library is named there by its base name and digest, never by a path of
// the machine that ran it.
type Spec struct {
	Name string `json:"name"`
	// LibraryPath is the module file, absolute: what Envoy loads. It stays
	// out of the JSON form, which names the library by LibraryFile and
	// LibrarySHA256.
	LibraryPath string `json:"-"`
	// SpecPath is the spec file Load read, "" for a spec read back from a
	// plan: out of the JSON form too.
	SpecPath      string                     `json:"-"`
	LibraryFile   string                     `json:"library"`
	LibrarySHA256 string                     `json:"library_sha256"`
	ModuleName    string                     `json:"module_name"`
	FilterName    string                     `json:"filter_name"`
	Config        json.RawMessage            `json:"config"`
	TierConfigs   map[string]json.RawMessage `json:"tier_configs,omitempty"`
	ConfigType    string                     `json:"config_type,omitempty"`
	Env           []string                   `json:"env,omitempty"`
}

// specFile is what a user writes: Spec without the digest, the library by
// path.
type specFile struct {
	Library     string                     `json:"library"`
	ModuleName  string                     `json:"module_name"`
	FilterName  string                     `json:"filter_name"`
	Config      json.RawMessage            `json:"config"`
	TierConfigs map[string]json.RawMessage `json:"tier_configs,omitempty"`
	ConfigType  string                     `json:"config_type,omitempty"`
	Env         []string                   `json:"env,omitempty"`
}

// namePattern is what a flavor's name may be: it names directories of a
// sweep's runs and columns of its datasets.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Load reads the spec file at path as the flavor name, resolves and
// digests its library, and checks everything that can be checked without
// Envoy (see Check); every problem is reported at once.
func Load(name, path string) (Spec, error) {
	s, err := load(name, path)
	if err != nil {
		return Spec{}, fmt.Errorf("module flavor %s (%s): %w", name, path, err)
	}
	return s, nil
}

func load(name, path string) (Spec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, err
	}
	if path, err = filepath.Abs(path); err != nil {
		return Spec{}, err
	}
	var f specFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // a misspelt key must not silently fall back
	if err := dec.Decode(&f); err != nil {
		return Spec{}, fmt.Errorf("not a spec file: %w", err)
	}
	s := Spec{Name: name, SpecPath: path, ModuleName: f.ModuleName, FilterName: f.FilterName, Config: f.Config,
		TierConfigs: f.TierConfigs, ConfigType: f.ConfigType, Env: f.Env}
	if f.Library == "" {
		return s, errors.Join(errors.New("library: name the module file"), s.check())
	}
	s.LibraryPath = f.Library
	if !filepath.IsAbs(s.LibraryPath) {
		s.LibraryPath = filepath.Join(filepath.Dir(path), s.LibraryPath)
	}
	if s.LibraryPath, err = filepath.Abs(s.LibraryPath); err != nil {
		return s, err
	}
	s.LibraryFile = filepath.Base(s.LibraryPath)
	var errs []error
	if s.LibrarySHA256, err = fileSHA256(s.LibraryPath); err != nil {
		errs = append(errs, fmt.Errorf("library: %w", err))
	} else if err := CheckExports(s.LibraryPath); err != nil {
		errs = append(errs, fmt.Errorf("library: %w", err))
	}
	return s, errors.Join(append(errs, s.check())...)
}

// Check reports what is wrong with a spec, each problem with its fix. It
// does not read the library (Load does).
func (s Spec) Check() error {
	if s.LibraryPath == "" || !filepath.IsAbs(s.LibraryPath) {
		return errors.Join(fmt.Errorf("module flavor %s: its library's path is unknown: name its spec with --module-flavor %s=FILE", s.Name, s.Name), s.check())
	}
	if err := s.check(); err != nil {
		return fmt.Errorf("module flavor %s: %w", s.Name, err)
	}
	return nil
}

func (s Spec) check() error {
	var errs []error
	if !namePattern.MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("name %q: use lower-case letters, digits and dashes, starting with a letter, at most 40", s.Name))
	}
	if s.ModuleName == "" {
		errs = append(errs, errors.New("module_name: give the module's name (dynamic_module_config.name)"))
	}
	if s.FilterName == "" {
		errs = append(errs, errors.New("filter_name: give the filter's name in the module (filter_name)"))
	}
	if len(s.Config) == 0 {
		errs = append(errs, errors.New("config: give the filter config, a JSON value in which ${TIER_FILE} names the tier's rule file"))
	}
	switch s.ConfigType {
	case "", ConfigString, ConfigStruct:
	default:
		errs = append(errs, fmt.Errorf("config_type %q: use %q or %q", s.ConfigType, ConfigString, ConfigStruct))
	}
	errs = append(errs, s.checkConfig("config", s.Config))
	for _, tier := range slices.Sorted(maps.Keys(s.TierConfigs)) {
		errs = append(errs, s.checkConfig("tier_configs."+tier, s.TierConfigs[tier]))
	}
	return errors.Join(append(errs, envvars.Check("env", "GODEBUG=cgocheck=0", s.Env)...)...)
}

// checkConfig renders a config with placeholder values, so a misspelt
// placeholder or a struct config that is not an object fails here.
func (s Spec) checkConfig(field string, cfg json.RawMessage) error {
	if len(cfg) == 0 {
		return nil
	}
	out, err := render(cfg, Values{Tier: "t", TierFile: "/t.conf", Rulesets: "/"})
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if s.ConfigType == ConfigStruct && !bytes.HasPrefix(bytes.TrimSpace([]byte(out)), []byte("{")) {
		return fmt.Errorf("%s: config_type struct needs a JSON object", field)
	}
	return nil
}

// AsStruct reports whether Envoy hands the module its config as a
// google.protobuf.Struct.
func (s Spec) AsStruct() bool { return s.ConfigType == ConfigStruct }

// HasTierConfig reports whether tier_configs gives tier a config of its
// own.
func (s Spec) HasTierConfig(tier string) bool {
	_, ok := s.TierConfigs[tier]
	return ok
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

package moduleflavor

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Values fill a config's placeholders for one configuration.
type Values struct {
	Tier     string // ${TIER}
	TierFile string // ${TIER_FILE}: absolute
	Rulesets string // ${RULESETS}: the tier files' directory, absolute
}

// placeholder is any ${NAME} in a config string.
var placeholder = regexp.MustCompile(`\$\{[^}]*\}`)

// FilterConfig is the filter config, JSON, that the flavor's module gets for
// v.Tier: tier_configs' entry for it, else config, with the placeholders
// of every string filled.
func (s Spec) FilterConfig(v Values) (string, error) {
	cfg, ok := s.TierConfigs[v.Tier]
	if !ok {
		cfg = s.Config
	}
	out, err := render(cfg, v)
	if err != nil {
		return "", fmt.Errorf("module flavor %s, tier %s: %w", s.Name, v.Tier, err)
	}
	return out, nil
}

// render fills the placeholders inside the strings of a JSON value. It
// works on the decoded value, never on the text, so a value with a quote
// or a backslash in it (a path) cannot change the JSON's structure.
func render(cfg json.RawMessage, v Values) (string, error) {
	var tree any
	if err := json.Unmarshal(cfg, &tree); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	values := map[string]string{"${TIER}": v.Tier, "${TIER_FILE}": v.TierFile, "${RULESETS}": v.Rulesets}
	var unknown []string
	tree = mapStrings(tree, func(s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(p string) string {
			if value, ok := values[p]; ok {
				return value
			}
			unknown = append(unknown, p)
			return p
		})
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown placeholder %s: use ${TIER}, ${TIER_FILE} or ${RULESETS}", strings.Join(unknown, ", "))
	}
	out, err := json.Marshal(tree)
	return string(out), err
}

// mapStrings applies f to every string of a decoded JSON value, object
// keys excepted.
func mapStrings(v any, f func(string) string) any {
	switch v := v.(type) {
	case string:
		return f(v)
	case []any:
		for i := range v {
			v[i] = mapStrings(v[i], f)
		}
	case map[string]any:
		for k := range v {
			v[k] = mapStrings(v[k], f)
		}
	}
	return v
}

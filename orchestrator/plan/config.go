package plan

import (
	"fmt"
	"strings"
)

// Config is one measured configuration: a flavor, its rule tier (TierNone for
// flavors without a WAF) and a request shape.
type Config struct {
	Flavor, Tier, Shape string
}

// ID names the configuration in datasets, file names and logs, e.g.
// "waf/full-crs/json_1k" or "envoy/none/get".
func (c Config) ID() string {
	return c.Flavor + "/" + c.Tier + "/" + c.Shape
}

// ParseConfigID is the inverse of Config.ID.
func ParseConfigID(id string) (Config, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Config{}, fmt.Errorf("config id %q: want flavor/tier/shape", id)
	}
	return Config{Flavor: parts[0], Tier: parts[1], Shape: parts[2]}, nil
}

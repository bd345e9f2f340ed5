package plan

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// MixPrefix starts the name of a mixed shape: "mix:get=60,json_1k=30,
// json_10k=10" sends those shapes together, in those proportions of the
// step's rate. The name is the shape's identity in datasets, as written.
const MixPrefix = "mix:"

// MixFilePrefix names a mix file in --shapes: "mixfile:traffic.mix" is
// the mix the file holds (ReadMixFile).
const MixFilePrefix = "mixfile:"

// ReadMixFile reads a mix from a file: one "SHAPE WEIGHT" (or
// SHAPE=WEIGHT) per line, in order; blank lines and lines starting with #
// are skipped. It returns the mix's name ("mix:get=60,json_1k=40"),
// checked like a mix written out.
func ReadMixFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("mix file: %w", err)
	}
	var parts []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts = append(parts, strings.Join(strings.FieldsFunc(line, func(r rune) bool { return r == '=' || r == ' ' || r == '\t' }), "="))
	}
	name := MixPrefix + strings.Join(parts, ",")
	if _, err := parseMix(name); err != nil {
		return "", fmt.Errorf("mix file %s: %w", path, err)
	}
	return name, nil
}

// Member is one plain shape of a mix and its weight.
type Member struct {
	Shape  Shape
	Weight int
}

// IsMix reports whether a shape name names a mix.
func IsMix(name string) bool { return strings.HasPrefix(name, MixPrefix) }

// parseMix reads a mix's members in the order written: plain shapes, each
// once, with positive whole weights, two or more.
func parseMix(name string) ([]Member, error) {
	body, ok := strings.CutPrefix(name, MixPrefix)
	if !ok {
		return nil, fmt.Errorf("shape %q is not a mix (%sSHAPE=WEIGHT,SHAPE=WEIGHT...)", name, MixPrefix)
	}
	var members []Member
	var errs []error
	for _, part := range strings.Split(body, ",") {
		shapeName, weightText, found := strings.Cut(part, "=")
		weight, err := strconv.Atoi(weightText)
		switch {
		case !found || err != nil || weight <= 0:
			errs = append(errs, fmt.Errorf("mix %q: %q is not SHAPE=WEIGHT with a positive whole weight", name, part))
			continue
		case IsMix(shapeName) || !slices.Contains(Shapes(), shapeName):
			errs = append(errs, fmt.Errorf("mix %q: unknown shape %q: use %s", name, shapeName, oneOf(Shapes())))
			continue
		case slices.ContainsFunc(members, func(m Member) bool { return m.Shape.Name == shapeName }):
			errs = append(errs, fmt.Errorf("mix %q: %s is named twice", name, shapeName))
			continue
		}
		shape, err := ShapeByName(shapeName)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		members = append(members, Member{Shape: shape, Weight: weight})
	}
	if len(errs) == 0 && len(members) < 2 {
		errs = append(errs, fmt.Errorf("mix %q: name two shapes or more (one shape alone is that shape)", name))
	}
	return members, errors.Join(errs...)
}

// mixShape is the Shape of a mix: its members, and the weighted mean size
// and field count of what it sends.
func mixShape(name string) (Shape, error) {
	members, err := parseMix(name)
	if err != nil {
		return Shape{}, err
	}
	var bytes, fields, total int
	for _, m := range members {
		bytes += m.Weight * m.Shape.Bytes
		fields += m.Weight * m.Shape.Fields
		total += m.Weight
	}
	return Shape{Name: name, Members: members, Bytes: bytes / total, Fields: fields / total}, nil
}

// PathName is a shape's name as a path component: a mix's name holds ":",
// "," and "=", which tools reading the run directories (ModSecurity's
// Include among them) may cut at; "mix:get=60,json_1k=40" is
// "mix-get60-json_1k40". Plain shapes are their name.
func PathName(shape string) string {
	if !IsMix(shape) {
		return shape
	}
	r := strings.NewReplacer(":", "-", ",", "-", "=", "")
	return r.Replace(shape)
}

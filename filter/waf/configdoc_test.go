package waf

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The configuration tables of filter/README.md and the fields the module
// accepts are the same set: a field nobody documented is a setting users
// cannot find, a documented field that is gone is one they set in vain.
func TestEveryConfigFieldIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		section string
		config  any
	}{
		{"## Configuration", Config{}},
		{"## Per-route configuration", RouteConfig{}},
	}
	for _, tc := range tests {
		t.Run(tc.section, func(t *testing.T) {
			documented := tableFields(t, string(doc), tc.section)
			accepted := jsonFields(reflect.TypeOf(tc.config), "")
			for _, f := range accepted {
				if !slices.Contains(documented, f) {
					t.Errorf("field %q is accepted but not in the table of %q", f, tc.section)
				}
			}
			for _, f := range documented {
				if !slices.Contains(accepted, f) {
					t.Errorf("%q documents field %q, which the module does not accept", tc.section, f)
				}
			}
		})
	}
}

var fieldRow = regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\|")

// tableFields lists the fields the table rows of a section name.
func tableFields(t *testing.T, doc, heading string) []string {
	t.Helper()
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	section := doc[start+len(heading)+2:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var fields []string
	for _, m := range fieldRow.FindAllStringSubmatch(section, -1) {
		fields = append(fields, m[1])
	}
	return fields
}

// jsonFields lists the dotted JSON names of a config type's fields, the
// fields of nested objects too.
func jsonFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		out = append(out, prefix+name)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			out = append(out, jsonFields(ft, prefix+name+".")...)
		}
	}
	return out
}

package plan

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// jsonCounts walks a decoded JSON value and counts leaves (what Coraza turns
// into ARGS) and arrays (each adds one more ARGS entry, its length).
func jsonCounts(v any) (leaves, arrays int) {
	switch x := v.(type) {
	case map[string]any:
		for _, child := range x {
			l, a := jsonCounts(child)
			leaves, arrays = leaves+l, arrays+a
		}
	case []any:
		arrays++
		for _, child := range x {
			l, a := jsonCounts(child)
			leaves, arrays = leaves+l, arrays+a
		}
	default:
		leaves++
	}
	return leaves, arrays
}

func TestShapeByName(t *testing.T) {
	tests := []struct {
		name                 string
		method, contentType  string
		wantBytes            int
		minFields, maxFields int
	}{
		{ShapeGet, "GET", "", 0, 0, 0},
		{ShapeJSON1K, "POST", "application/json", 1024, 15, 25},
		{ShapeJSON10K, "POST", "application/json", 10240, 170, 210},
		{ShapeJSON50K, "POST", "application/json", 51200, 800, 950},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ShapeByName(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != tt.name || s.Method != tt.method || s.ContentType != tt.contentType {
				t.Errorf("got name %q method %q content type %q", s.Name, s.Method, s.ContentType)
			}
			if s.Bytes != len(s.Body) {
				t.Errorf("Bytes = %d, body has %d", s.Bytes, len(s.Body))
			}
			if diff := s.Bytes - tt.wantBytes; diff*10 > tt.wantBytes || -diff*10 > tt.wantBytes {
				t.Errorf("Bytes = %d, want %d ±10%%", s.Bytes, tt.wantBytes)
			}
			if s.Fields < tt.minFields || s.Fields > tt.maxFields {
				t.Errorf("Fields = %d, want %d..%d", s.Fields, tt.minFields, tt.maxFields)
			}
			if tt.method == "GET" {
				if s.Body != nil {
					t.Errorf("GET has a body of %d bytes", len(s.Body))
				}
				return
			}
			var doc any
			if err := json.Unmarshal(s.Body, &doc); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			leaves, arrays := jsonCounts(doc)
			if leaves != s.Fields {
				t.Errorf("Fields = %d, JSON walk counts %d leaves", s.Fields, leaves)
			}
			// Coraza's recommended configuration denies 1,000 ARGS or more.
			if leaves+arrays >= 1000 {
				t.Errorf("%d leaves + %d arrays reach the 1000 ARGS limit", leaves, arrays)
			}
		})
	}
}

func TestShapeByNameIsDeterministic(t *testing.T) {
	for _, name := range Shapes() {
		a, _ := ShapeByName(name)
		b, _ := ShapeByName(name)
		if !bytes.Equal(a.Body, b.Body) {
			t.Errorf("%s: two builds differ", name)
		}
	}
}

func TestShapeByNameUnknown(t *testing.T) {
	_, err := ShapeByName("json_2k")
	if err == nil || !strings.Contains(err.Error(), `unknown shape "json_2k": use one of get, json_1k`) {
		t.Fatalf("err = %v", err)
	}
}

// Values and keys must stay inside a plain alphabet and avoid words the CRS
// looks for at paranoia level 1, so the WAF passes every request.
func TestShapeBodiesAreBenign(t *testing.T) {
	plain := regexp.MustCompile(`^[A-Za-z0-9 .:-]*$`)
	forbidden := []string{
		"select", "union", "insert", "delete", "drop", "update", "create", "alter",
		"script", "exec", "sleep", "benchmark", "passwd",
		" or ", " and ", "--", "../", "$(", "<", ">", ";", "|", "`", "'", `"`, "&",
	}
	for _, name := range Shapes()[1:] {
		s, _ := ShapeByName(name)
		var doc any
		if err := json.Unmarshal(s.Body, &doc); err != nil {
			t.Fatal(err)
		}
		for _, text := range jsonStrings(doc) {
			if !plain.MatchString(text) {
				t.Errorf("%s: %q has characters outside [A-Za-z0-9 .:-]", name, text)
			}
			lower := " " + strings.ToLower(text) + " "
			for _, f := range forbidden {
				if strings.Contains(lower, f) {
					t.Errorf("%s: %q contains %q", name, text, f)
				}
			}
		}
	}
}

// jsonStrings returns every key and string value of a decoded JSON value.
func jsonStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			out = append(out, k)
			out = append(out, jsonStrings(child)...)
		}
	case []any:
		for _, child := range x {
			out = append(out, jsonStrings(child)...)
		}
	case string:
		out = append(out, x)
	}
	return out
}

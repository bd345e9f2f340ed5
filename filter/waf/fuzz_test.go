package waf

import (
	"strings"
	"testing"
)

// FuzzParseConfig: any bytes give a Config or an error, never a panic, and
// an accepted config is internally consistent. Seeds live in
// testdata/fuzz/FuzzParseConfig; `make soak` runs the long form.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"directives":["SecRuleEngine On"]}`,
		`{"mode":"detect","failure_mode":"open","failure_status":503,"inspect_response":false}`,
		`{"deny_response":{"body":"x","headers":{"a":"b"}},"audit_log":"/tmp/a","audit_engine":"On"}`,
		`{"stream_bodies":{"content_types":["Application/GRPC"],"upgrades":["websocket","CONNECT"]}}`,
		`{"stream_bodies":{"content_types":["application/*"],"upgrades":["a, b"]}}`,
		`{"directives":"not a list"}`, `{}`, ``, `null`, `[]`, `{"mode":""}`, `{"failure_status":-1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if cfg.Mode != ModeBlock && cfg.Mode != ModeDetect && cfg.Mode != ModeOff {
			t.Fatalf("accepted mode %q", cfg.Mode)
		}
		if cfg.FailureStatus < 200 || cfg.FailureStatus > 599 || cfg.InspectResponse == nil || cfg.LogMatchedRules == nil {
			t.Fatalf("accepted inconsistent config %+v", cfg)
		}
		for _, d := range cfg.Directives {
			if strings.Contains(d, "\r") {
				t.Fatalf("accepted a directive with CR: %q", d)
			}
		}
		checkStreamBodies(t, cfg.StreamBodies)
	})
}

// FuzzParseRouteConfig does the same for per-route configurations.
func FuzzParseRouteConfig(f *testing.F) {
	for _, seed := range []string{`{}`, `{"mode":"off"}`, `{"mode":"detect"}`, `{"directives":["SecRuleEngine On"]}`, `{"mode":"off","directives":["x"]}`, `x`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, err := ParseRouteConfig(data)
		if err != nil {
			return
		}
		if rc.Mode == ModeOff && len(rc.Directives) > 0 {
			t.Fatal("accepted mode off with directives")
		}
		if rc.Mode != ModeBlock && rc.Mode != ModeDetect && rc.Mode != ModeOff {
			t.Fatalf("accepted mode %q", rc.Mode)
		}
		if rc.StreamBodies != nil {
			checkStreamBodies(t, *rc.StreamBodies)
		}
	})
}

// checkStreamBodies: accepted entries are lowercase and could match a
// request (a media type without parameters or wildcards, one protocol).
func checkStreamBodies(t *testing.T, sb StreamBodies) {
	t.Helper()
	for _, ct := range sb.ContentTypes {
		if mt, ok := mediaType(ct); !ok || mt != ct {
			t.Fatalf("accepted content type %q", ct)
		}
	}
	for _, u := range sb.Upgrades {
		if u != strings.ToLower(u) || strings.ContainsAny(u, ", \t;") {
			t.Fatalf("accepted upgrade %q", u)
		}
	}
}

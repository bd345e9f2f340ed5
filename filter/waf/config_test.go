package waf

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", json: `{"directives":["SecRuleEngine On"]}`, check: func(t *testing.T, c Config) {
			if c.Mode != ModeBlock || c.FailureMode != FailClosed || c.FailureStatus != 500 ||
				!*c.InspectResponse || !*c.LogMatchedRules || c.MetadataNamespace != "corazawaf" {
				t.Errorf("unexpected defaults: %+v", c)
			}
		}},
		{name: "all fields", json: `{"directives":["SecRuleEngine On"],"mode":"detect","failure_mode":"open","failure_status":503,
			"inspect_response":false,"deny_response":{"body":"no","headers":{"content-type":"text/plain"}},
			"audit_log":"/tmp/a.log","log_matched_rules":false,"metadata_namespace":"waf"}`, check: func(t *testing.T, c Config) {
			if c.Mode != ModeDetect || c.FailureMode != FailOpen || c.FailureStatus != 503 || *c.InspectResponse ||
				c.DenyResponse.Body != "no" || c.AuditEngine != "RelevantOnly" || *c.LogMatchedRules || c.MetadataNamespace != "waf" {
				t.Errorf("fields not honoured: %+v", c)
			}
		}},
		{name: "empty", json: ``, wantErr: "empty filter_config"},
		{name: "not json", json: `SecRuleEngine On`, wantErr: "not valid corazawaf JSON"},
		{name: "unknown field", json: `{"directivs":[]}`, wantErr: `unknown field "directivs"`},
		{name: "trailing data", json: `{} {}`, wantErr: "trailing data"},
		{name: "bad mode", json: `{"mode":"loud"}`, wantErr: `mode "loud": use block, detect or off`},
		{name: "bad failure mode", json: `{"failure_mode":"maybe"}`, wantErr: "use closed or open"},
		{name: "bad failure status", json: `{"failure_status":42}`, wantErr: "failure_status 42"},
		{name: "audit engine without log", json: `{"audit_engine":"On"}`, wantErr: "audit_engine without audit_log"},
		{name: "bad audit engine", json: `{"audit_log":"/tmp/x","audit_engine":"Sometimes"}`, wantErr: "use RelevantOnly or On"},
		{name: "several errors at once", json: `{"mode":"x","failure_mode":"y"}`, wantErr: "use closed or open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestTestHooksRejectedInReleaseBuild(t *testing.T) {
	_, err := ParseConfig([]byte(`{"test_hooks":{"panic_header":"x-corazawaf-panic"}}`))
	if testHooksEnabled {
		if err != nil {
			t.Fatalf("test build must accept test_hooks: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "corazawaf_testhooks") {
		t.Fatalf("release build must reject test_hooks, got %v", err)
	}
}

func TestParseRouteConfig(t *testing.T) {
	tests := []struct {
		json, wantErr string
		want          Mode
	}{
		{json: `{}`, want: ModeBlock},
		{json: `{"mode":"off"}`, want: ModeOff},
		{json: `{"mode":"detect"}`, want: ModeDetect},
		{json: `{"mode":"detect","directives":["SecRuleEngine On"]}`, want: ModeDetect},
		{json: `{"mode":"off","directives":["SecRuleEngine On"]}`, wantErr: "drop the directives"},
		{json: `{"mode":"sometimes"}`, wantErr: "use block, detect or off"},
		{json: `{"directives":"SecRuleEngine On"}`, wantErr: "not valid corazawaf JSON"},
		{json: `{"directives":["SecRuleEngine On"],"acceleration":"shadow"}`, want: ModeBlock},
		{json: `{"directives":["SecRuleEngine On"],"acceleration":"turbo"}`, wantErr: `per-route acceleration "turbo"`},
		{json: `{"acceleration":"prefilter"}`, wantErr: "acceleration without directives"},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			rc, err := ParseRouteConfig([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || rc.Mode != tt.want {
				t.Fatalf("got %+v, %v; want mode %s", rc, err, tt.want)
			}
		})
	}
}

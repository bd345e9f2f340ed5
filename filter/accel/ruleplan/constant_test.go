package ruleplan

import (
	"maps"
	"slices"
	"testing"
	"testing/fstest"
)

func constant(t *testing.T, root fstest.MapFS, text string) map[int]DropKind {
	t.Helper()
	out := map[int]DropKind{}
	for _, d := range Constant(ruleSet(t, root, text)).Dropped {
		if d.Reason == "" {
			t.Errorf("rule %d dropped without a reason", d.ID)
		}
		out[d.ID] = d.Kind
	}
	return out
}

// A paranoia-level block as CRS writes it: gates at levels 1 and 2 in
// phases 1 and 2, a rule of each level, the marker.
const plBlock = `
SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 1" "id:11,phase:1,pass,nolog,tag:'OWASP_CRS',skipAfter:END-BLOCK"
SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 1" "id:12,phase:2,pass,nolog,tag:'OWASP_CRS',skipAfter:END-BLOCK"
SecRule ARGS "@rx attack" "id:100,phase:2,block,t:none,tag:'OWASP_CRS',setvar:tx.score=+5"
SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:13,phase:1,pass,nolog,tag:'OWASP_CRS',skipAfter:END-BLOCK"
SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:14,phase:2,pass,nolog,tag:'OWASP_CRS',skipAfter:END-BLOCK"
SecRule ARGS "@rx paranoid" "id:200,phase:2,block,t:none,tag:'OWASP_CRS',setvar:tx.score=+5"
SecRule REQUEST_HEADERS "@rx paranoid" "id:201,phase:1,block,t:none,tag:'OWASP_CRS',setvar:tx.score=+5"
SecMarker "END-BLOCK"
SecRule TX:score "@ge 5" "id:300,phase:2,deny,t:none"
`

func TestConstantDropsWhatParanoiaDecides(t *testing.T) {
	pl1 := map[int]DropKind{11: NeverMatches, 12: NeverMatches, 13: OnlySkips, 14: OnlySkips, 200: NeverReached, 201: NeverReached}
	pl2 := map[int]DropKind{11: NeverMatches, 12: NeverMatches, 13: NeverMatches, 14: NeverMatches}
	for _, c := range []struct {
		name, before string
		want         map[int]DropKind
	}{
		{"level set by SecAction", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"`, pl1},
		{"level 2", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=2"`, pl2},
		{"CRS's defaults over counts and macros", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.blocking_paranoia_level=2"
SecRule &TX:blocking_paranoia_level "@eq 0" "id:2,phase:1,pass,nolog,setvar:tx.blocking_paranoia_level=1"
SecRule &TX:detection_paranoia_level "@eq 0" "id:3,phase:1,pass,nolog,setvar:'tx.detection_paranoia_level=%{TX.blocking_paranoia_level}'"`,
			map[int]DropKind{2: NeverMatches, 11: NeverMatches, 12: NeverMatches, 13: NeverMatches, 14: NeverMatches}},
		{"arithmetic", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=3,setvar:tx.detection_paranoia_level=-2"`, pl1},
		{"level set only for some clients", `SecRule REMOTE_ADDR "@ipMatch 10.0.0.0/8" "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"`,
			map[int]DropKind{}},
		{"level set in phase 2 for phase 2 only", `SecAction "id:1,phase:2,pass,nolog,setvar:tx.detection_paranoia_level=1"`,
			// phase 1 sees it unset: no value, so its gates never match
			map[int]DropKind{11: NeverMatches, 13: NeverMatches, 12: NeverMatches, 14: OnlySkips, 200: NeverReached}},
		{"a key built at run time could name it", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"
SecRule REQUEST_HEADERS:X "@rx (.*)" "id:2,phase:1,pass,nolog,capture,setvar:'tx.detection_%{tx.1}=4'"`, map[int]DropKind{}},
		{"a key built at run time that cannot name it", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"
SecRule REQUEST_HEADERS:X "@rx (.*)" "id:2,phase:1,pass,nolog,capture,setvar:'tx.header_%{tx.1}=4'"`, pl1},
		{"a SecAction with no pass takes the default action", `SecAction "id:1,phase:1,nolog,setvar:tx.detection_paranoia_level=1"`, map[int]DropKind{}},
		{"a ctl may remove the gate alone", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"
SecRule REQUEST_HEADERS:X "@rx y" "id:2,phase:1,pass,nolog,ctl:ruleRemoveById=13"`,
			map[int]DropKind{11: NeverMatches, 12: NeverMatches, 14: OnlySkips, 200: NeverReached}},
		{"a ctl may remove the gate with all it skips", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"
SecRule REQUEST_HEADERS:X "@rx y" "id:2,phase:1,pass,nolog,ctl:ruleRemoveByTag=OWASP_CRS"`, pl1},
		{"a ctl may take the gate's target", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"
SecRule REQUEST_HEADERS:X "@rx y" "id:2,phase:1,pass,nolog,ctl:ruleRemoveTargetByTag=OWASP_CRS;TX:DETECTION_PARANOIA_LEVEL"`,
			map[int]DropKind{11: NeverMatches, 12: NeverMatches}},
		{"setvar once per matching value", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.a=1,setvar:tx.b=5"
SecRule TX:a|TX:b "@lt 3" "id:2,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=+1"`, pl1},
		{"setvar once per matching value, twice", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.a=1,setvar:tx.b=2"
SecRule TX:a|TX:b "@lt 3" "id:2,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=+1"`, pl2},
		{"an allow may end phase 1 before the level is set", `SecRule REMOTE_ADDR "@ipMatch 10.0.0.0/8" "id:1,phase:1,allow,nolog"
SecAction "id:2,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"`,
			// phase 1 is decided (allow skips its rest, nothing there runs);
			// phase 2 may start without the level
			map[int]DropKind{11: NeverMatches, 13: OnlySkips, 201: NeverReached}},
		{"an updated action sets the level", `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"
SecRule REQUEST_HEADERS:X "@rx y" "id:2,phase:1,pass,nolog"
SecRuleUpdateActionById 2 "setvar:tx.detection_paranoia_level=2"`, map[int]DropKind{}},
		{"a default transformation", `SecDefaultAction "phase:1,pass,log,t:length"
SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"`, map[int]DropKind{}},
		{"compilation errors ignored", `SecIgnoreRuleCompilationErrors On
SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"`, map[int]DropKind{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := constant(t, nil, c.before+plBlock)
			if !maps.Equal(got, c.want) {
				t.Errorf("dropped %v, want %v", got, c.want)
			}
		})
	}
}

func TestConstantDecidesTheUnreadResponseBody(t *testing.T) {
	const rules = `
SecRule RESPONSE_BODY "@rx (?i)error in your sql" "id:1,phase:4,block,t:none"
SecRule RESPONSE_BODY "@contains <?php" "id:2,phase:4,block,t:none,t:removeWhitespace,t:lowercase"
SecRule RESPONSE_BODY "@rx ^$" "id:3,phase:4,pass,t:none,setvar:tx.empty=1"
SecRule RESPONSE_BODY "@rx ^$" "id:4,phase:4,pass,t:none,t:base64Encode"
SecRule RESPONSE_BODY "@pmFromFile words.data" "id:5,phase:4,block,t:none"
SecRule RESPONSE_BODY|RESPONSE_HEADERS "@rx x" "id:6,phase:4,block,t:none"
SecRule TX:empty "@eq 1" "id:7,phase:4,pass,nolog,t:none"
SecRule TX:empty "@eq 0" "id:8,phase:4,pass,nolog,t:none"
SecRule RESPONSE_BODY "@pm a b" "id:10,phase:4,block,t:none"
SecRule RESPONSE_BODY "@pm a  b" "id:11,phase:4,block,t:none"
`
	for _, c := range []struct {
		name, before string
		want         map[int]DropKind
	}{
		// 3 always matches the empty body: 7 sees what it set. No phrase
		// is empty but in 11 (two spaces: @pm's list has "").
		{"what a rule over the empty body sets", "SecResponseBodyAccess Off", map[int]DropKind{1: NeverMatches, 2: NeverMatches, 5: NeverMatches, 8: NeverMatches, 10: NeverMatches}},
		{"access on", "SecResponseBodyAccess On", map[int]DropKind{}},
		{"a ctl may turn it on", `SecResponseBodyAccess Off
SecRule REQUEST_HEADERS:X "@rx y" "id:9,phase:1,pass,nolog,ctl:responseBodyAccess=On"`, map[int]DropKind{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := constant(t, fstest.MapFS{"words.data": {Data: []byte("a\n")}}, c.before+rules); !maps.Equal(got, c.want) {
				t.Errorf("dropped %v, want %v", got, c.want)
			}
		})
	}
}

func TestConstantKeepsGatesWhoseRemovalShows(t *testing.T) {
	const level = `SecAction "id:1,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=1"` + "\n"
	for _, c := range []struct {
		name, text string
		want       map[int]DropKind
	}{
		{"a gate that logs", `SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:13,phase:1,pass,log,skipAfter:END"
SecRule ARGS "@rx x" "id:200,phase:1,block"
SecMarker END`, map[int]DropKind{200: NeverReached}},
		{"a gate that sets a variable", `SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:13,phase:1,pass,nolog,setvar:tx.skipped=1,skipAfter:END"
SecRule ARGS "@rx x" "id:200,phase:1,block"
SecMarker END`, map[int]DropKind{200: NeverReached}},
		{"a rule reading MATCHED_VAR before matching", `SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:13,phase:1,pass,nolog,skipAfter:END"
SecRule ARGS "@rx x" "id:200,phase:1,block"
SecMarker END
SecRule MATCHED_VAR "@rx 1" "id:300,phase:1,pass"`, map[int]DropKind{200: NeverReached}},
		{"a skip:N that may count the gate", `SecRule REQUEST_HEADERS:X "@rx y" "id:2,phase:1,pass,nolog,skip:1"
SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:13,phase:1,pass,nolog,skipAfter:END"
SecRule ARGS "@rx x" "id:200,phase:1,block"
SecMarker END`, map[int]DropKind{}},
		{"a skip:N of one rule before the gate", `SecRule REQUEST_HEADERS:X "@rx y" "id:2,phase:1,pass,nolog,skip:1"
SecRule ARGS "@rx z" "id:3,phase:1,block"
SecMarker M
SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:13,phase:1,pass,nolog,skipAfter:END"
SecRule ARGS "@rx x" "id:200,phase:1,block"
SecMarker END`, map[int]DropKind{13: OnlySkips, 200: NeverReached}},
		{"a skipAfter that may skip to the gate's own marker", `SecRule RESPONSE_HEADERS:Content-Encoding "@rx gzip" "id:2,phase:1,pass,nolog,skipAfter:END"
SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:13,phase:1,pass,nolog,skipAfter:END"
SecRule ARGS "@rx x" "id:200,phase:1,block"
SecMarker END`, map[int]DropKind{2: SkipsOnlyDropped, 13: OnlySkips, 200: NeverReached}},
		{"a skipAfter that may skip to the middle of the block", `SecRule REQUEST_HEADERS:X "@rx y" "id:2,phase:1,pass,nolog,skipAfter:MIDDLE"
SecRule TX:DETECTION_PARANOIA_LEVEL "@lt 2" "id:13,phase:1,pass,nolog,skipAfter:END"
SecMarker MIDDLE
SecRule ARGS "@rx x" "id:200,phase:1,block"
SecMarker END`, map[int]DropKind{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := constant(t, nil, level+c.text)
			if !maps.Equal(got, c.want) {
				t.Errorf("dropped %v, want %v", got, c.want)
			}
		})
	}
}

// TestConstantOnCRS pins what the analysis finds in CRS at paranoia 1 and
// 4; the differential tests in filter/waf check that the rule set without
// them decides as the whole one does.
func TestConstantOnCRS(t *testing.T) {
	for _, c := range []struct {
		level                  string
		dropped, kept          []int
		minDropped, maxDropped int
	}{
		// coraza.conf-recommended turns response body access on.
		{"", []int{901400, 911011, 911013, 911014, 920013, 920014, 920200, 942101, 949053, 980013}, []int{911100, 920100, 920540, 942100, 949110, 951100}, 250, 400},
		{`SecAction "id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=4"`, []int{901120, 911011, 911013, 911015, 911017, 920013}, []int{920200, 942101, 949053, 949110, 956110}, 150, 250},
		{"SecResponseBodyAccess Off", []int{920013, 950010, 951100, 955100, 955350, 956110}, []int{920100, 942100, 954010, 954130}, 350, 450},
	} {
		rs := crsRuleSet(t, c.level)
		dropped := Constant(rs).Dropped
		ids := make([]int, len(dropped))
		for i, d := range dropped {
			ids[i] = d.ID
		}
		t.Logf("paranoia %q: %d of %d rules dropped", c.level, len(ids), len(rs.Rules))
		if len(ids) < c.minDropped || len(ids) > c.maxDropped {
			t.Errorf("%d dropped, want %d to %d", len(ids), c.minDropped, c.maxDropped)
		}
		for _, id := range c.dropped {
			if !slices.Contains(ids, id) {
				t.Errorf("%s: rule %d kept, want dropped", c.level, id)
			}
		}
		for _, id := range c.kept {
			if slices.Contains(ids, id) {
				t.Errorf("%s: rule %d dropped, want kept", c.level, id)
			}
		}
	}
}

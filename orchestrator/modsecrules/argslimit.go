package modsecrules

import (
	"fmt"
	"regexp"
	"strings"
)

// corazaDefaultArgumentsLimit is Coraza's SecArgumentsLimit when the rule
// set sets none (ModSecurity's default is no limit at all).
const corazaDefaultArgumentsLimit = 1000

// argumentsLimitRule matches the first line of the module's argument-flood
// rules (filter/waf/builtin/@coraza.conf):
//
//	SecRule ARGUMENTS_LIMIT_REACHED "@eq 1" "id:200004,phase:1,...,deny,status:400,..."
//
// ARGUMENTS_LIMIT_REACHED is a Coraza variable: ModSecurity's parser
// rejects it ("Expecting a variable"). Other forms are left alone, so that
// `nginx -t` reports them instead of a guess here.
var argumentsLimitRule = regexp.MustCompile(`^(\s*)SecRule\s+ARGUMENTS_LIMIT_REACHED\s+"@eq 1"(.*)$`)

func isArgumentsLimitRule(d directive) bool {
	return argumentsLimitRule.MatchString(d.lines[0])
}

// rewriteArgumentsLimitRule gives ModSecurity the same defence in its own
// terms, the form ModSecurity's own recommended configuration uses:
// SecArgumentsLimit makes it drop arguments past the limit, and the rule
// matches when &ARGS reached it. The actions (deny, status 400) are kept.
// Two differences remain: ModSecurity counts arguments of all sources
// together where Coraza counts each source apart, and a request with
// exactly the limit matches.
func (w *writer) rewriteArgumentsLimitRule(d directive, source string) string {
	var out strings.Builder
	if w.argumentsLimit == 0 {
		w.argumentsLimit = corazaDefaultArgumentsLimit
		fmt.Fprintf(&out, "# wafsweep: Coraza's default arguments limit, which ModSecurity lacks (it keeps every argument).\nSecArgumentsLimit %d\n\n", w.argumentsLimit)
	}
	first := argumentsLimitRule.ReplaceAllString(d.lines[0], fmt.Sprintf(`${1}SecRule &ARGS "@ge %d"${2}`, w.argumentsLimit))
	w.changes = append(w.changes, Change{
		Source: source, Directive: d.text(), Became: strings.TrimSpace(strings.TrimSuffix(first, `\`)),
		Reason: "ARGUMENTS_LIMIT_REACHED is Coraza-only; ModSecurity drops arguments past SecArgumentsLimit and counts the rest in &ARGS",
	})
	fmt.Fprintf(&out, "# wafsweep rewrote for ModSecurity: %s\n", d.text())
	out.WriteString(strings.Join(append([]string{first}, d.lines[1:]...), "\n") + "\n\n")
	return out.String()
}

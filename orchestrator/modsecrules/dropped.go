package modsecrules

import "strings"

// droppedDirectives are the Coraza directives libmodsecurity3 3.0.9 refuses
// to load (it rejects the whole rule set), keyed by lower-case name. Each is
// dropped only because leaving it out does not change what the rules
// inspect or decide. Directives whose absence would change verdicts (for
// example SecDataset, which @pmFromDataset rules read) are not listed: they
// reach ModSecurity, which fails `nginx -t` with its own message.
var droppedDirectives = map[string]string{
	// In Coraza's recommended configuration (@coraza.conf) itself.
	"secrequestbodyinmemorylimit": "ModSecurity 3 rejects it (\"no longer supported\"): nginx decides how much of a body stays in memory (client_body_buffer_size, set in nginx.conf), the inspection limit is SecRequestBodyLimit",
	// Coraza-only settings that ModSecurity's parser does not know.
	"secresponsebodyjsondepthlimit":  "Coraza-only: ModSecurity 3.0.9 has no such directive (it does not parse JSON response bodies into variables)",
	"secrxprefilter":                 "Coraza-only: a speed switch of Coraza's @rx (a literal pre-filter before the regex), not a rule; ModSecurity has no equivalent",
	"secignorerulecompilationerrors": "Coraza-only; ModSecurity always refuses a rule set with a compilation error, which is what a benchmark wants",
	// Directives ModSecurity 3 parses but refuses as unsupported; neither
	// affects inspection.
	"secserversignature": "ModSecurity 3 rejects it (\"not supported\"); it only rewrites the Server response header",
	"secsensorid":        "ModSecurity 3 rejects it (\"not yet supported\"); it only labels audit records",
}

// dropReason says why a directive is left out, or "" to keep it.
func dropReason(name string) string {
	return droppedDirectives[strings.ToLower(name)]
}

// Change is one directive left out of the ModSecurity rule set, or
// rewritten for it.
type Change struct {
	Source    string // file (or "directives") it came from
	Directive string // its text, continuation lines joined
	Became    string // the rewritten first line; "" when dropped
	Reason    string
}

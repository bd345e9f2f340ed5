// Package modsecrules writes, for libmodsecurity3 (nginx + ModSecurity),
// the rule set that a corazawaf filter configuration loads into Coraza, so
// both WAFs inspect with the same rules: the same OWASP CRS v4 files
// (extracted from the coraza-coreruleset module compiled into this binary,
// not a distribution's own CRS) and the same tier files, translated where
// ModSecurity's SecLang parser differs from Coraza's.
//
// What the translation changes, and why (each checked against Debian 12's
// libmodsecurity3 3.0.9 through `nginx -t`):
//
//   - Include names: Coraza resolves `@coraza.conf`, `@crs-setup.conf` and
//     `@owasp_crs/...` from embedded files. They become paths of the
//     extracted copies, and the extracted names lose their '@': ModSecurity's
//     lexer ends an Include path at '@' ("Not able to open file").
//   - A blank line after every directive: coraza-coreruleset strips CRS's
//     comments and blank lines, which leaves chained rules without an action
//     list (`SecRule TX:EARLY_BLOCKING "@eq 1"` in 949111) directly followed
//     by the next SecRule. ModSecurity then takes that next line for the
//     missing actions ("Expecting an action, got: SecRule ...");
//     a blank line ends the rule, a comment line does not.
//   - Directives ModSecurity rejects are dropped, each with a comment in the
//     written file (see dropped.go for the list and the reason of each).
//
// Directives Coraza and ModSecurity 3.0.9 both accept are kept verbatim,
// among them SecRequestBodyJsonDepthLimit and SecArgumentsLimit.
package modsecrules

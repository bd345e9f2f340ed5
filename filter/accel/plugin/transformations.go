package plugin

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
)

// Coraza's multiMatch evaluates the original value, then moves on to a
// transformation's output only when the transformation reports a change.
// A rule without multiMatch evaluates the output of its whole chain
// whatever the reports say. So a multiMatch collector sees that final value
// among its values exactly when every step of the chain reports each change
// it makes (reporting a change it did not make only repeats a value).
//
// Of the transformations CRS uses, in Coraza v3.8.1, two change values they
// report unchanged:
//
//   - htmlEntityDecode reports len(output) != len(input), and decoding can
//     keep the length ("&apos;" shrinks by five bytes what five "&nGt;"
//     grow by).
//   - removeWhitespace is strings.Map, which rewrites each invalid UTF-8
//     byte as U+FFFD; only a dropped space sets its flag.
//
// The others report every change: lowercase, normalizePath(Win) compare
// output and input; removeNulls compares lengths, but only ever removes;
// urlDecodeUni, jsDecode, escapeSeqDecode, replaceComments and
// removeCommentsChar flag each sequence they rewrite, and each rewrite
// shrinks the value; utf8toUnicode flags each non-ASCII rune it encodes;
// cmdLine and compressWhitespace flag every rewrite but a space kept as a
// space; cssDecode, base64Decode, length, sha1 and hexEncode always report
// a change.
//
// For each of the two, the accelerator registers under a private name a
// transformation with the same output and an honest flag (output !=
// input), which only its collectors name: the rules of the rule set keep
// Coraza's own. The outputs are those of Coraza's functions, which are one
// library call each (golang.org/x/net/html resolves to one version in a
// build, so to Coraza's); the accelerator's differential test checks them
// against Coraza on every CRS chain.
const (
	HonestHTMLEntityDecode = "accelHtmlEntityDecode"
	HonestRemoveWhitespace = "accelRemoveWhitespace"
)

// honest maps each misreporting transformation, by Coraza's lower-case
// name, to its honest twin.
var honest = map[string]string{
	"htmlentitydecode": HonestHTMLEntityDecode,
	"removewhitespace": HonestRemoveWhitespace,
}

// HonestChain returns chain with each transformation that can change a
// value unreported replaced by its honest twin: a multiMatch rule with the
// returned chain evaluates, among its values, the one a rule with chain and
// without multiMatch evaluates. It returns chain itself when nothing needs
// replacing.
func HonestChain(chain []string) []string {
	var out []string
	for i, name := range chain {
		twin, ok := honest[strings.ToLower(name)]
		if !ok {
			continue
		}
		if out == nil {
			out = append([]string(nil), chain...)
		}
		out[i] = twin
	}
	if out == nil {
		return chain
	}
	return out
}

func registerTransformations() {
	plugins.RegisterTransformation(HonestHTMLEntityDecode, htmlEntityDecode)
	plugins.RegisterTransformation(HonestRemoveWhitespace, removeWhitespace)
}

func htmlEntityDecode(data string) (string, bool, error) {
	return reportChange(data, html.UnescapeString(data))
}

func removeWhitespace(data string) (string, bool, error) {
	return reportChange(data, strings.Map(dropSpace, data))
}

// dropSpace is removeWhitespace's mapping: every Unicode space goes.
func dropSpace(r rune) rune {
	if unicode.IsSpace(r) {
		return -1
	}
	return r
}

func reportChange(in, out string) (string, bool, error) {
	return out, out != in, nil
}

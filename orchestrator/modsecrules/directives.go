package modsecrules

import "strings"

// directive is one logical SecLang line as written: a directive with its
// continuation lines, or a run of one comment or blank line (name "").
type directive struct {
	lines []string // physical lines, without line ends
	name  string   // the directive's first word; "" for comments and blanks
}

// splitDirectives cuts SecLang text into logical lines. A line ending in a
// backslash continues on the next one, as both parsers read it.
func splitDirectives(text string) []directive {
	var out []directive
	var cur *directive
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if cur == nil {
			trimmed := strings.TrimSpace(line)
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				out = append(out, directive{lines: []string{line}})
				continue
			}
			cur = &directive{name: strings.Fields(trimmed)[0]}
		}
		cur.lines = append(cur.lines, line)
		if !strings.HasSuffix(line, `\`) {
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil { // a continuation at the end of the text
		out = append(out, *cur)
	}
	// strings.Split leaves an empty last element for text ending in "\n".
	if n := len(out); n > 0 && out[n-1].name == "" && out[n-1].lines[0] == "" && strings.HasSuffix(text, "\n") {
		out = out[:n-1]
	}
	return out
}

// text is the directive on one line: continuation backslashes removed and
// the pieces joined by single spaces.
func (d directive) text() string {
	parts := make([]string, len(d.lines))
	for i, l := range d.lines {
		parts[i] = strings.TrimSpace(strings.TrimSuffix(l, `\`))
	}
	return strings.Join(parts, " ")
}

// args is the text after the directive's name.
func (d directive) args() string {
	return strings.TrimSpace(strings.TrimPrefix(d.text(), d.name))
}

// unquote removes one pair of surrounding double or single quotes.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

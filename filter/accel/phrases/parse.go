package phrases

import (
	"bufio"
	"bytes"
	"strings"
)

// ParseFile reads a @pmFromFile data file as Coraza does: one phrase per
// line, trimmed and lower-cased; empty lines and lines starting with '#'
// are skipped.
func ParseFile(data []byte) []string {
	var phrases []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		phrases = append(phrases, strings.ToLower(line))
	}
	return phrases
}

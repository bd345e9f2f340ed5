package accel

import (
	"bytes"
	"io/fs"
)

// lineEraser is the root the accelerated WAF reads its rule files from:
// the files as they are, but for the lines of the markers no rule can
// reach (ruleplan.UnusedMarkers), which it leaves empty. Coraza evaluates
// every marker in every phase, so a marker that is never built costs no
// request anything. Empty lines keep every other directive on its line,
// the one Coraza's logs and rule references print.
//
// Coraza reads rule files with fs.ReadFile. Open serves the files
// unchanged: a reader through it sees the markers, a rule set that
// decides the same, only slower.
type lineEraser struct {
	fs.FS
	// erase holds, by the file name seclang.Read resolved, the line ranges
	// (first and last, from 1) to leave empty. It is set once the rule set
	// is analysed, before the WAF reads a file.
	erase map[string][][2]int
}

func (e *lineEraser) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(e.FS, name)
	if err != nil || len(e.erase[name]) == 0 {
		return data, err
	}
	return eraseLines(data, e.erase[name]), nil
}

func (e *lineEraser) Glob(pattern string) ([]string, error) { return fs.Glob(e.FS, pattern) }

// eraseLines empties the given line ranges of data and keeps its line
// breaks, so no other line moves.
func eraseLines(data []byte, ranges [][2]int) []byte {
	lines := bytes.Split(data, []byte("\n"))
	for _, r := range ranges {
		for n := r[0]; n <= r[1] && n <= len(lines); n++ {
			lines[n-1] = nil
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

package accel

import (
	"bytes"
	"io/fs"

	"github.com/wafsweep/wafsweep/filter/accel/ruleplan"
	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// ruleEditor is the root the accelerated WAF reads its rule files from:
// the files as they are, but for some directives rewritten in place. The
// markers no rule can reach (ruleplan.UnusedMarkers) become empty lines:
// Coraza evaluates every marker in every phase, and one never built costs
// no request anything. The first rule of a fold (ruleplan.Fold) becomes
// the fold's SecAction. Every other directive stays on its line, the one
// Coraza's logs and rule references print.
//
// Coraza reads rule files with fs.ReadFile. Open serves the files
// unchanged: a reader through it would see the rule set as written, which
// decides the same, only slower.
type ruleEditor struct {
	fs.FS
	// edits holds, by the file name seclang.Read resolved, what to put in
	// place of which lines. It is set once the rule set is analysed,
	// before the WAF reads a file.
	edits map[string][]lineEdit
}

// lineEdit puts text in place of lines first to last (from 1); the lines
// after the first are left empty.
type lineEdit struct {
	first, last int
	text        string
}

func (e *ruleEditor) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(e.FS, name)
	if err != nil || len(e.edits[name]) == 0 {
		return data, err
	}
	return editLines(data, e.edits[name]), nil
}

func (e *ruleEditor) Glob(pattern string) ([]string, error) { return fs.Glob(e.FS, pattern) }

// plan records the edits: markers out, folds in.
func (e *ruleEditor) plan(markers []*seclang.Rule, folds []ruleplan.Fold) {
	e.edits = map[string][]lineEdit{}
	add := func(d seclang.Directive, text string) {
		e.edits[d.File] = append(e.edits[d.File], lineEdit{d.FirstLine, d.Line, text})
	}
	for _, m := range markers {
		add(m.Directive, "")
	}
	for _, f := range folds {
		add(f.First.Directive, f.Directive)
	}
}

// editLines applies edits to data and keeps its line breaks, so no other
// line moves.
func editLines(data []byte, edits []lineEdit) []byte {
	lines := bytes.Split(data, []byte("\n"))
	for _, e := range edits {
		for n := e.first; n <= e.last && n <= len(lines); n++ {
			lines[n-1] = nil
		}
		if e.first >= 1 && e.first <= len(lines) {
			lines[e.first-1] = []byte(e.text)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

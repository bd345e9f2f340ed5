// Package seclang reads SecLang directives the way Coraza v3.8.1 reads them
// (comments, line continuations, Include with globs) and parses the rule
// directives into plain data, so the accelerator can analyse a rule set
// before Coraza builds it. It never evaluates anything.
package seclang

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// maxIncludes mirrors Coraza's include recursion guard.
const maxIncludes = 100

// Directive is one logical SecLang line with its continuation lines joined.
type Directive struct {
	// Name is the directive name in lower case ("secrule").
	Name string
	// Args is everything after the name, as Coraza passes it on.
	Args string
	// File and Line say where the directive ends, for messages; FirstLine
	// where it starts (a trailing backslash continues it on the next line).
	File      string
	Line      int
	FirstLine int
}

// InlineFile is the File of the directives in Read's text itself.
const InlineFile = "_inline_"

// Read returns the directives of text in evaluation order, with Include
// directives replaced by the directives of the files they name (resolved
// against root, as Coraza resolves them against its root filesystem).
func Read(root fs.FS, text string) ([]Directive, error) {
	r := &reader{root: root, dir: "."}
	if err := r.parse(InlineFile, text); err != nil {
		return nil, err
	}
	return r.out, nil
}

type reader struct {
	root     fs.FS
	dir      string
	includes int
	out      []Directive
}

// parse follows Coraza's parser: lines are trimmed, "#" lines dropped, a
// trailing backslash joins the next line, and a line ending in a backtick
// opens a block that a line starting with a backtick closes.
func (r *reader) parse(file, data string) error {
	sc := bufio.NewScanner(strings.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var buf strings.Builder
	inBackticks := false
	line, first := 0, 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		if buf.Len() == 0 {
			first = line
		}
		if !inBackticks && l[len(l)-1] == '`' {
			inBackticks = true
		} else if inBackticks && l[0] == '`' {
			inBackticks = false
		}
		if inBackticks {
			buf.WriteString(l)
			buf.WriteString("\n")
			continue
		}
		if l[len(l)-1] == '\\' {
			buf.WriteString(strings.TrimSuffix(l, "\\"))
			continue
		}
		buf.WriteString(l)
		if err := r.directive(file, first, line, buf.String()); err != nil {
			return err
		}
		buf.Reset()
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if inBackticks {
		return fmt.Errorf("%s: backticks left open", file)
	}
	return nil
}

func (r *reader) directive(file string, first, line int, l string) error {
	name, args, _ := strings.Cut(l, " ")
	name = strings.ToLower(name)
	if len(args) >= 3 && args[0] == '"' && args[len(args)-1] == '"' {
		args = strings.Trim(args, `"`)
	}
	if name != "include" {
		r.out = append(r.out, Directive{Name: name, Args: args, File: file, Line: line, FirstLine: first})
		return nil
	}
	if r.includes >= maxIncludes {
		return fmt.Errorf("%s:%d: more than %d includes", file, line, maxIncludes)
	}
	r.includes++
	return r.include(args)
}

func (r *reader) include(path string) error {
	files := []string{path}
	isGlob := strings.Contains(path, "*")
	if isGlob {
		var err error
		if files, err = fs.Glob(r.root, path); err != nil {
			return fmt.Errorf("include %q: %w", path, err)
		}
	}
	for _, f := range files {
		f = strings.TrimSpace(f)
		if !isGlob && !strings.HasPrefix(f, "/") {
			f = filepath.Join(r.dir, f)
		}
		data, err := fs.ReadFile(r.root, f)
		if err != nil {
			return fmt.Errorf("include %q: %w", f, err)
		}
		saved := r.dir
		r.dir = filepath.Dir(f)
		err = r.parse(f, string(data))
		r.dir = saved
		if err != nil {
			return err
		}
	}
	return nil
}

// errSyntax marks directives this package cannot take apart.
var errSyntax = errors.New("syntax")

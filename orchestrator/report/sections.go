package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A document (the project's READMEs) quotes datasets in generated
// sections:
//
//	<!-- BEGIN generated: NAME (make readme-figures[ KIND]: results/a results/b) -->
//	... what KIND renders from the datasets, in order ...
//	<!-- END generated: NAME -->
//
// The BEGIN line names the datasets, relative to the document, so that
// changing what a section quotes is an edit of that line and a rerun. KIND
// says how they are rendered (sectionKinds); without it each is a sweep's
// Headline. Every occurrence of beginMarker must start a line sectionBegin
// parses: one that did not would otherwise pass as plain text, its figures
// stale without a word.
const beginMarker = "<!-- BEGIN generated:"

// sectionBegin matches a whole line, so that a broken BEGIN line cannot
// borrow the rest of a marker from the lines after it.
var sectionBegin = regexp.MustCompile(`(?m)^<!-- BEGIN generated: ([a-z0-9-]+) \(make readme-figures(?: ([a-z-]+))?: ([^)\n]*)\) -->$`)

// endMarker is the line that closes section name.
func endMarker(name string) []byte {
	return []byte("<!-- END generated: " + name + " -->")
}

// A sectionRenderer renders the datasets a section names: dir is the
// document's directory, datasets are as the BEGIN line writes them
// (relative to dir), and also how the section shows them.
type sectionRenderer func(dir string, datasets []string) ([]byte, error)

var sectionKinds = map[string]sectionRenderer{
	"":             eachDataset(Headline),
	"datasets":     datasetIndex,
	"ground-truth": groundTruthTable,
	"memory":       memoryTable,
	"audit":        auditTable,
	"transport":    transportTable,
	"members":      membersTable,
	"slo":          sloTable,
	"matrix":       matrixTables,
	"module-cost":  moduleCostTable,
	"engine":       engineTable,
	"soak":         eachDataset(soakSummary),
}

// SectionKinds lists the KIND words a BEGIN line may carry.
func SectionKinds() []string {
	var kinds []string
	for k := range sectionKinds {
		if k != "" {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// RegenerateSections returns doc with every generated section rendered
// again from its datasets; dir is the document's directory.
func RegenerateSections(doc []byte, dir string) ([]byte, error) {
	var out bytes.Buffer
	rest := doc
	for {
		at := bytes.Index(rest, []byte(beginMarker))
		if at < 0 {
			out.Write(rest)
			return out.Bytes(), nil
		}
		out.Write(rest[:at])
		rest = rest[at:]
		line, _, ended := bytes.Cut(rest, []byte("\n"))
		groups := sectionBegin.FindSubmatch(line)
		if groups == nil || !ended {
			return nil, fmt.Errorf("line %d: %q is not a BEGIN marker: want %s NAME (make readme-figures[ KIND]: DATASET...) --> with NAME of a-z, 0-9 and -",
				1+bytes.Count(doc[:len(doc)-len(rest)], []byte("\n")), line, beginMarker)
		}
		name, kind, datasets := string(groups[1]), string(groups[2]), strings.Fields(string(groups[3]))
		end := endMarker(name)
		bodyAt := len(line) + 1
		endAt := bytes.Index(rest[bodyAt:], end)
		if endAt < 0 {
			return nil, fmt.Errorf("generated section %q has no %q line", name, end)
		}
		render, ok := sectionKinds[kind]
		if !ok {
			return nil, fmt.Errorf("generated section %q: unknown kind %q (use one of %s, or none for a sweep's headline)",
				name, kind, strings.Join(SectionKinds(), ", "))
		}
		if len(datasets) == 0 {
			return nil, fmt.Errorf("generated section %q names no dataset", name)
		}
		body, err := render(dir, datasets)
		if err != nil {
			return nil, fmt.Errorf("generated section %q: %w", name, err)
		}
		out.Write(rest[:bodyAt])
		out.Write(body)
		out.Write(end)
		rest = rest[bodyAt+endAt+len(end):]
	}
}

// eachDataset renders every dataset on its own, a blank line between.
func eachDataset(render func(dir, shownDir string) ([]byte, error)) sectionRenderer {
	return func(dir string, datasets []string) ([]byte, error) {
		var out bytes.Buffer
		for i, d := range datasets {
			body, err := render(filepath.Join(dir, d), d)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				out.WriteString("\n")
			}
			out.Write(body)
		}
		return out.Bytes(), nil
	}
}

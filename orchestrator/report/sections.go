package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// A document (the project's README) quotes datasets in generated sections:
//
//	<!-- BEGIN generated: NAME (make readme-figures: results/a results/b) -->
//	... Headline of each dataset, in order ...
//	<!-- END generated: NAME -->
//
// The BEGIN line names the datasets, relative to the document, so that
// changing what a section quotes is an edit of that line and a rerun.
var sectionBegin = regexp.MustCompile(`<!-- BEGIN generated: ([a-z0-9-]+) \(make readme-figures: ([^)]*)\) -->\n`)

// RegenerateSections returns doc with every generated section rendered
// again from its datasets; dir is the document's directory.
func RegenerateSections(doc []byte, dir string) ([]byte, error) {
	var out bytes.Buffer
	rest := doc
	for {
		loc := sectionBegin.FindSubmatchIndex(rest)
		if loc == nil {
			out.Write(rest)
			return out.Bytes(), nil
		}
		name, datasets := string(rest[loc[2]:loc[3]]), strings.Fields(string(rest[loc[4]:loc[5]]))
		end := []byte("<!-- END generated: " + name + " -->")
		endAt := bytes.Index(rest[loc[1]:], end)
		if endAt < 0 {
			return nil, fmt.Errorf("generated section %q has no %q line", name, end)
		}
		if len(datasets) == 0 {
			return nil, fmt.Errorf("generated section %q names no dataset", name)
		}
		out.Write(rest[:loc[1]])
		for i, d := range datasets {
			headline, err := Headline(filepath.Join(dir, d), d)
			if err != nil {
				return nil, fmt.Errorf("generated section %q: %w", name, err)
			}
			if i > 0 {
				out.WriteString("\n")
			}
			out.Write(headline)
		}
		out.Write(end)
		rest = rest[loc[1]+endAt+len(end):]
	}
}

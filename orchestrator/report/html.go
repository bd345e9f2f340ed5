package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// renderHTML turns report.md into report.html: the same document, in the
// same order, as one self-contained page. Every plot is inlined as SVG, so
// the page opens offline and can be mailed or attached as one file; its
// content security policy forbids every fetch, so a page that tried one
// would show it as a console error (the browser test fails on those).
// Raw HTML in the markdown is not passed through: free text in the report
// (plan notes, command lines) is escaped, never markup.
func renderHTML(title string, md []byte, plots []plot) ([]byte, error) {
	byPath := make(map[string][]byte, len(plots))
	for _, p := range plots {
		byPath["plots/"+p.file] = p.svg
	}
	converter := goldmark.New(
		goldmark.WithExtensions(extension.Table),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(
			util.Prioritized(inlineSVG{byPath: byPath}, 100))),
	)
	var body bytes.Buffer
	if err := converter.Convert(md, &body); err != nil {
		return nil, fmt.Errorf("report: render report.html: %w", err)
	}
	var page bytes.Buffer
	fmt.Fprintf(&page, htmlHead, html.EscapeString(title))
	page.Write(body.Bytes())
	page.WriteString("</main>\n</body>\n</html>\n")
	return page.Bytes(), nil
}

// htmlHead opens the page. The tables are wide (the knee table has 17
// columns): they scroll on their own instead of widening the page.
const htmlHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>%s</title>
<style>
body { font-family: sans-serif; margin: 0; color: #222; }
main { max-width: 1200px; margin: 0 auto; padding: 1em 2em; }
table { border-collapse: collapse; display: block; overflow-x: auto; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
blockquote { border-left: 4px solid #d9a400; background: #fff8e0; margin: 1em 0; padding: 0.5em 1em; }
pre { background: #f6f6f6; padding: 0.75em; overflow-x: auto; }
.plot svg { max-width: 100%%; height: auto; }
</style>
</head>
<body>
<main>
`

// inlineSVG renders a markdown image of one of the report's plots as the
// plot's SVG itself instead of a link to the file.
type inlineSVG struct {
	byPath map[string][]byte
}

func (r inlineSVG) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindImage, r.renderImage)
}

func (r inlineSVG) renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	img := node.(*ast.Image)
	dest := string(img.Destination)
	svg, ok := r.byPath[dest]
	if !ok {
		// Every image report.md names is a plot Generate drew; another
		// would be a file the page cannot carry.
		return ast.WalkStop, fmt.Errorf("report: report.md shows %q, which is not one of the sweep's plots", dest)
	}
	fmt.Fprintf(w, `<span class="plot" role="img" aria-label="%s">`, html.EscapeString(altText(img, source)))
	_, _ = w.Write(svg)
	_, _ = w.WriteString("</span>")
	return ast.WalkSkipChildren, nil
}

// altText is an image's description as plain text: backslash escapes and
// entities (mdText writes "<" as "&lt;") undone.
func altText(img *ast.Image, source []byte) string {
	var b strings.Builder
	for c := img.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			b.Write(util.UnescapePunctuations(t.Segment.Value(source)))
		}
	}
	return html.UnescapeString(b.String())
}

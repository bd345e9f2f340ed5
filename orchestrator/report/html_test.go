package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// report.html carries what report.md does with the plots inline, and what
// a sweep's metadata says (notes, command line, CPU model: free text from
// the machine and the user) stays text, never markup.
func TestReportHTML(t *testing.T) {
	ladder := []int{1000, 2000, 3000, 4000}
	steps := simulatedSweep(t, map[plan.Config]int{{Flavor: "waf", Tier: "full-crs", Shape: "get"}: 2600}, ladder)
	meta := testMeta()
	meta.Notes = []string{`<script>alert("note")</script>`, `<img src=x onerror=alert(1)>`}
	meta.CommandLine = append(meta.CommandLine, `--label=<b>bold</b>`)
	dir, _ := generated(t, steps, ladder, meta)
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, banned := range []string{"<script", "<img", "<b>", "plots/"} {
		if strings.Contains(html, banned) {
			t.Errorf("report.html contains %q", banned)
		}
	}
	for _, want := range []string{
		"<title>wafsweep report: sw-test</title>",
		"&lt;script&gt;alert(&quot;note&quot;)&lt;/script&gt;",
		"--label=&lt;b&gt;bold&lt;/b&gt;",
		"Test CPU &lt;x86&gt;",
		`<h2>Capacity at each p99 objective</h2>`,
		`<td><code>waf/full-crs/get</code></td>`,
		`<span class="plot" role="img" aria-label="Knee RPS: waf"><svg xmlns="http://www.w3.org/2000/svg"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	plots, _ := os.ReadDir(filepath.Join(dir, "plots"))
	if got := strings.Count(html, "<svg "); got != len(plots) {
		t.Errorf("report.html inlines %d SVGs, Generate drew %d plots", got, len(plots))
	}
}

// A report.md image that is not one of the sweep's plots cannot be carried
// by a self-contained page: rendering fails rather than leave a link.
func TestReportHTMLRefusesAnUnknownImage(t *testing.T) {
	md := []byte("# r\n\n![a plot](plots/a.svg)\n\n![elsewhere](https://127.0.0.1/x.svg)\n")
	_, err := renderHTML("r", md, []plot{{file: "a.svg", svg: []byte("<svg></svg>")}})
	if err == nil || !strings.Contains(err.Error(), `"https://127.0.0.1/x.svg"`) {
		t.Errorf("renderHTML = %v, want a refusal naming the image", err)
	}
}

package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/internal/repofiles"
)

// browserNames are the headless browsers tried, smallest first: Debian's
// chromium-headless-shell (what make test installs), then full Chromium or
// Chrome.
var browserNames = []string{"chromium-headless-shell", "chromium", "google-chrome"}

// requireBrowser finds a headless browser: $WAFSWEEP_BROWSER, else the
// first of browserNames on PATH. Without one the test is skipped, or fails
// when WAFSWEEP_BROWSER_TESTS=required (as make test sets it).
func requireBrowser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WAFSWEEP_BROWSER"); p != "" {
		return p
	}
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WAFSWEEP_BROWSER_TESTS") == "required" {
		t.Fatalf("a headless browser is needed (one of %v; make test installs chromium-headless-shell)", browserNames)
	}
	t.Skipf("no headless browser (one of %v; make test installs chromium-headless-shell)", browserNames)
	return ""
}

// pageFacts is what the browser saw of a loaded page.
type pageFacts struct {
	Title    string   `json:"title"`
	Headings []string `json:"headings"` // h2 texts, in order
	// Plots are the inline SVGs' rendered sizes, width x height in CSS
	// pixels.
	Plots       [][2]float64 `json:"plots"`
	Images      int          `json:"images"`  // <img> elements (none: plots are inline)
	Scripts     int          `json:"scripts"` // <script> elements (none: the page is static)
	FirstHeader []string     `json:"firstHeader"`
	// Problems are console errors and warnings, uncaught exceptions, log
	// entries of level warning or error (a blocked fetch lands there) and
	// requests for anything but the page itself.
	Problems []string `json:"-"`
}

const factsScript = `({
	title: document.title,
	headings: Array.from(document.querySelectorAll('h2'), h => h.textContent),
	plots: Array.from(document.querySelectorAll('.plot svg'), s => {
		const r = s.getBoundingClientRect(); return [r.width, r.height];
	}),
	images: document.images.length,
	scripts: document.scripts.length,
	firstHeader: Array.from(document.querySelectorAll('table')[0]?.rows[0]?.cells ?? [], c => c.textContent),
})`

// loadInBrowser opens page (a file) in a fresh headless browser and reports
// what it rendered and every problem it logged.
func loadInBrowser(t *testing.T, browser, page string) pageFacts {
	t.Helper()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	url := "file://" + page
	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventConsoleAPICalled:
			switch ev.Type {
			case cdpruntime.ConsoleAPICalledTypeError, cdpruntime.ConsoleAPICalledTypeWarning, cdpruntime.ConsoleAPICalledTypeAssert:
				report("console.%s: %s", ev.Type, consoleText(ev.Args))
			}
		case *cdpruntime.EventExceptionThrown:
			report("uncaught exception: %s", exceptionText(ev.ExceptionDetails))
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				report("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if ev.Request.URL != url {
				report("request for %s", ev.Request.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	// Navigate returns once the page has loaded.
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("browser on %s: %v", page, err)
	}
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[pageFacts](factsScript))
	if err != nil {
		t.Fatalf("browser on %s: %v", page, err)
	}
	// Late console messages and blocked fetches of the load itself arrive
	// as events after the evaluation; give them a moment.
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	facts.Problems = slices.Clone(problems)
	mu.Unlock()
	return facts
}

func exceptionText(d *cdpruntime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

func consoleText(args []*cdpruntime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if len(a.Value) > 0 {
			parts = append(parts, string(a.Value))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}

// checkReportPage asserts what every report.html must show in a browser:
// no problem logged, the planner's section first, the knee plots next,
// every plot drawn inline and visible. withSLOs says the sweep searched
// SLO knees, so its first table is the planner's.
func checkReportPage(t *testing.T, facts pageFacts, wantPlots int, withSLOs bool) {
	t.Helper()
	for _, p := range facts.Problems {
		t.Errorf("browser: %s", p)
	}
	if !strings.HasPrefix(facts.Title, "wafsweep report") {
		t.Errorf("title %q", facts.Title)
	}
	if len(facts.Headings) < 3 || facts.Headings[0] != "Capacity at each p99 objective" ||
		facts.Headings[1] != "Knees per tier and shape" || facts.Headings[2] != "Method" {
		t.Errorf("the first screen is not the planner's table, the knee plot and the method: headings %q", facts.Headings)
	}
	if withSLOs && (len(facts.FirstHeader) < 2 || facts.FirstHeader[0] != "Config" || !strings.HasPrefix(facts.FirstHeader[1], "p99 <=")) {
		t.Errorf("the first table is not the planner's: header %q", facts.FirstHeader)
	}
	if facts.Scripts != 0 {
		t.Errorf("%d <script> elements: the report is static text and SVG", facts.Scripts)
	}
	if facts.Images != 0 {
		t.Errorf("%d <img> elements: plots must be inline, the page self-contained", facts.Images)
	}
	if len(facts.Plots) != wantPlots {
		t.Errorf("%d plots rendered, want %d", len(facts.Plots), wantPlots)
	}
	for i, size := range facts.Plots {
		if size[0] < 200 || size[1] < 100 {
			t.Errorf("plot %d rendered %.0f x %.0f px: not visible", i, size[0], size[1])
		}
	}
}

// The report of a simulated sweep opens in a real browser, offline, with
// its first screen the planner's table and the knee plots, and nothing
// logged to the console.
func TestReportHTMLRendersInABrowser(t *testing.T) {
	browser := requireBrowser(t)
	ladder := []int{1000, 2000, 3000, 4000}
	steps := envoyAndWAFSweep(t, ladder, 3800, 2600, 1500)
	meta := testMeta()
	meta.Notes = []string{`<script>console.error("ran")</script>`} // must stay text
	dir, _ := generated(t, steps, ladder, meta)
	checkReportPage(t, loadInBrowser(t, browser, filepath.Join(dir, "report.html")), countPlots(t, dir), true)
}

// Every committed sweep dataset's report, drawn by the current code, opens
// as cleanly: real data, real metadata (command lines, notes) in the page.
// Only what git tracks counts, so the test reads what a clean checkout
// holds and never a sweep running into results/ meanwhile (dataset's
// TestEveryCommittedSweepReadsAndIsCurrent holds each to the current schema).
func TestCommittedReportsRenderInABrowser(t *testing.T) {
	browser := requireBrowser(t)
	dirs, err := repofiles.CommittedDirs("results", dataset.MetadataFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no committed sweep dataset found")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			sw, err := dataset.ReadSweep(dir)
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			if err := Generate(out, sw.Steps, sw.Derived, sw.Meta); err != nil {
				t.Fatal(err)
			}
			checkReportPage(t, loadInBrowser(t, browser, filepath.Join(out, "report.html")), countPlots(t, out), len(sw.SLOKnees) > 0)
		})
	}
}

// The browser check sees what it exists to catch: a console error, an
// uncaught exception and a fetch from the page (to a closed loopback
// port) are each reported, and so is a fetch the report's own content
// policy blocks.
func TestBrowserCheckSeesAPagesFaults(t *testing.T) {
	browser := requireBrowser(t)
	for _, tc := range []struct {
		name, page string
		want       []string
	}{
		{
			name: "faulty page",
			page: `<!DOCTYPE html><html><head><title>faulty</title></head><body>
<img src="http://127.0.0.1:9/missing.png">
<script>console.error("drawn wrong"); throw new Error("broken script");</script>
</body></html>`,
			want: []string{`console.error: "drawn wrong"`, "broken script", "request for http://127.0.0.1:9/missing.png"},
		},
		{
			name: "report head with a fetch",
			page: fmt.Sprintf(htmlHead, "fetching") + `<img src="http://127.0.0.1:9/plot.png"></main></body></html>`,
			want: []string{"Content Security Policy"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "page.html")
			if err := os.WriteFile(page, []byte(tc.page), 0o644); err != nil {
				t.Fatal(err)
			}
			all := strings.Join(loadInBrowser(t, browser, page).Problems, "\n")
			t.Logf("reported:\n%s", all)
			for _, want := range tc.want {
				if !strings.Contains(all, want) {
					t.Errorf("the check missed %q; it reported:\n%s", want, all)
				}
			}
		})
	}
}

// countPlots is how many plots Generate drew into dir.
func countPlots(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "plots"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".svg") {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no plots drawn")
	}
	return n
}

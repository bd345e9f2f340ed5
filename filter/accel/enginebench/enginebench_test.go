// Package enginebench measures CPU per request of the ways to run a rule
// tier: stock Coraza ("stock"), stock Coraza with its own experimental @rx
// prefilter ("stock-rxpf", `SecRxPreFilter On`: upstream's best), Coraza
// with RE2 as @rx ("re2", package re2rx) and the accelerated build
// ("accelerated", package accel), through the
// filter's own Stream glue, for each tier and shape. `make bench` runs
//
//	go test -run TestEngineCSV ./filter/accel/enginebench -args -engine.csv results/bench/engine.csv
//
// CPU is the process's user+system time (getrusage), so garbage collection
// is charged to the requests that caused it and other processes on the
// machine do not inflate it the way they inflate wall time. Flavors are
// interleaved batch by batch, so drifts hit them alike.
package enginebench

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/filter/accel/re2rx"
	"github.com/wafsweep/wafsweep/filter/waf"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

var (
	csvPath    = flag.String("engine.csv", "", "write the engine CSV here (TestEngineCSV is skipped without it)")
	advPath    = flag.String("adversarial.csv", "", "write the random/attacker-input CSV here")
	tiersFlag  = flag.String("engine.tiers", "full-crs", "comma-separated tiers (module-off: the filter with mode off)")
	shapesFlag = flag.String("engine.shapes", "", "comma-separated shapes (default: all)")
	flavorFlag = flag.String("engine.flavors", strings.Join(flavors, ","), "comma-separated flavors, of "+strings.Join(flavors, ", "))
	rounds     = flag.Int("engine.rounds", 7, "measured batches per flavor")
	batchFloor = flag.Duration("engine.batch", 300*time.Millisecond, "CPU time a batch aims at")
)

// Flavors, in the order they are built: re2 last, because installing the
// RE2 @rx changes every WAF built after it in this process.
var flavors = []string{"stock", "stock-rxpf", "accelerated", "re2"}

// rxPreFilter turns on Coraza's own @rx prefilter (experimental, off by
// default); it must come before the rules it applies to.
const rxPreFilter = "SecRxPreFilter On"

type flavorFilter struct {
	name   string
	filter *waf.Filter
}

// buildFlavors builds one filter per flavor for a tier.
func buildFlavors(t testing.TB, tier string, names []string) []flavorFilter {
	t.Helper()
	var out []flavorFilter
	for _, f := range names {
		if !slices.Contains(flavors, f) {
			t.Fatalf("unknown flavor %q: use %s", f, strings.Join(flavors, ", "))
		}
		directives := []string{"Include " + rulesetPath(t, tier)}
		if f == "stock-rxpf" {
			directives = append([]string{rxPreFilter}, directives...)
		}
		cfg := map[string]any{"directives": directives, "log_matched_rules": false}
		if tier == plan.TierModuleOff { // the module's glue with nothing to inspect
			cfg = map[string]any{"mode": "off"}
		}
		switch f {
		case "accelerated":
			cfg["acceleration"] = "prefilter"
		case "re2":
			re2rx.Install()
			cfg["acceleration"] = "off"
		default:
			cfg["acceleration"] = "off"
		}
		js, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		filter, err := waf.NewFilter(js, nil)
		if err != nil {
			t.Fatalf("%s/%s: %v", tier, f, err)
		}
		out = append(out, flavorFilter{f, filter})
	}
	return out
}

func rulesetPath(t testing.TB, tier string) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "rulesets", tier+".conf")
}

// request is one shape's request, as the filter's Stream sees it.
type request struct {
	name   string
	head   waf.RequestHead
	body   []byte
	fields int
}

func shapeRequest(s plan.Shape) request {
	head := waf.RequestHead{
		Conn:   waf.Connection{ClientIP: "127.0.0.1", ClientPort: 40000, ServerIP: "127.0.0.1", ServerPort: 8080},
		Method: s.Method, Path: "/api/orders", Authority: "wafsweep.test", HasAuthority: true, Protocol: "HTTP/1.1",
		Headers:     []waf.Header{{Name: "user-agent", Value: "wafsweep/1.0"}, {Name: "accept", Value: "*/*"}},
		EndOfStream: len(s.Body) == 0,
	}
	if len(s.Body) > 0 {
		head.Headers = append(head.Headers, waf.Header{Name: "content-type", Value: s.ContentType},
			waf.Header{Name: "content-length", Value: strconv.Itoa(len(s.Body))})
	}
	return request{name: s.Name, head: head, body: s.Body, fields: s.Fields}
}

const frame = 16 << 10

// serve runs one request through a stream, as the Envoy hooks do, and
// returns the status of a local reply (0 when none).
func serve(f *waf.Filter, r request) int {
	s, err := f.NewStream(nil)
	if err != nil {
		panic(err)
	}
	d := s.OnRequestHeaders(r.head)
	for off := 0; d.Action == waf.Hold && off < len(r.body); off += frame {
		end := min(off+frame, len(r.body))
		d = s.OnRequestBody([][]byte{r.body[off:end]}, end == len(r.body))
	}
	if d.Action == waf.Defer {
		// Envoy's binding runs this on an inspection thread (bodies of
		// 8 KiB and more); it is the request's cost all the same.
		d = d.Deferred()
	}
	status := 0
	if d.Action == waf.Reply {
		status = d.Reply.Status
	} else {
		s.OnResponseHeaders(200, []waf.Header{{Name: "content-type", Value: "text/plain"}}, true)
	}
	s.Complete()
	return status
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sample is one batch: CPU and allocations per request.
type sample struct {
	cpu            time.Duration
	allocs, allocB uint64
}

func batch(f *waf.Filter, r request, n int) sample {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := cpuNow()
	for range n {
		serve(f, r)
	}
	cpu := cpuNow() - start
	runtime.ReadMemStats(&after)
	return sample{cpu: cpu / time.Duration(n), allocs: (after.Mallocs - before.Mallocs) / uint64(n),
		allocB: (after.TotalAlloc - before.TotalAlloc) / uint64(n)}
}

// result is one row of the CSV.
type result struct {
	tier, shape, flavor string
	bytes, fields       int
	median, min, max    time.Duration
	allocs, allocBytes  uint64
}

// measure interleaves the flavors' batches for one tier and request.
func measure(fs []flavorFilter, tier string, r request) []result {
	sizes := make([]int, len(fs))
	for i, f := range fs {
		warm := batch(f.filter, r, 1)
		sizes[i] = max(1, int(*batchFloor/max(warm.cpu, time.Microsecond)))
	}
	samples := make([][]sample, len(fs))
	for range *rounds {
		for i, f := range fs {
			samples[i] = append(samples[i], batch(f.filter, r, sizes[i]))
		}
	}
	var out []result
	for i, f := range fs {
		s := samples[i]
		cpus := make([]time.Duration, len(s))
		for k := range s {
			cpus[k] = s[k].cpu
		}
		slices.Sort(cpus)
		mid := s[len(s)/2]
		out = append(out, result{tier: tier, shape: r.name, flavor: f.name, bytes: len(r.body), fields: r.fields,
			median: cpus[len(cpus)/2], min: cpus[0], max: cpus[len(cpus)-1], allocs: mid.allocs, allocBytes: mid.allocB})
	}
	return out
}

func TestEngineCSV(t *testing.T) {
	if *csvPath == "" && *advPath == "" {
		t.Skip("run with -args -engine.csv FILE (make bench)")
	}
	var rows, adv []result
	for _, tier := range strings.Split(*tiersFlag, ",") {
		fs := buildFlavors(t, tier, strings.Split(*flavorFlag, ","))
		if *csvPath != "" {
			shapes := plan.Shapes()
			if *shapesFlag != "" {
				shapes = strings.Split(*shapesFlag, ",")
			}
			for _, name := range shapes {
				shape, err := plan.ShapeByName(name)
				if err != nil {
					t.Fatal(err)
				}
				r := shapeRequest(shape)
				for _, f := range fs {
					if status := serve(f.filter, r); status != 0 {
						t.Fatalf("%s %s %s: benign request answered %d", tier, f.name, name, status)
					}
				}
				got := measure(fs, tier, r)
				logRows(t, got)
				rows = append(rows, got...)
			}
		}
		if *advPath != "" {
			for _, r := range adversarialRequests() {
				// Both are attacks: a flavor that lets one through did
				// not inspect it, and its time would mean nothing.
				for _, f := range fs {
					if status := serve(f.filter, r); status != 403 {
						t.Fatalf("%s %s %s: answered %d, want 403", tier, f.name, r.name, status)
					}
				}
				got := measure(fs, tier, r)
				logRows(t, got)
				adv = append(adv, got...)
			}
		}
	}
	if *csvPath != "" {
		writeCSV(t, *csvPath, rows)
	}
	if *advPath != "" {
		writeCSV(t, *advPath, adv)
	}
}

func logRows(t *testing.T, rows []result) {
	for _, r := range rows {
		t.Logf("%-9s %-16s %-11s %10.3f ms (min %.3f, max %.3f) %6d allocs", r.tier, r.shape, r.flavor,
			ms(r.median), ms(r.min), ms(r.max), r.allocs)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func writeCSV(t *testing.T, path string, rows []result) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"tier", "shape", "bytes", "fields", "flavor", "cpu_ns_per_req", "cpu_ns_min", "cpu_ns_max", "allocs", "alloc_bytes"})
	for _, r := range rows {
		_ = w.Write([]string{r.tier, r.shape, strconv.Itoa(r.bytes), strconv.Itoa(r.fields), r.flavor,
			strconv.FormatInt(r.median.Nanoseconds(), 10), strconv.FormatInt(r.min.Nanoseconds(), 10),
			strconv.FormatInt(r.max.Nanoseconds(), 10), strconv.FormatUint(r.allocs, 10), strconv.FormatUint(r.allocBytes, 10)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// adversarialRequests are JSON bodies of the json_10k structure whose
// values an attacker chose to make the accelerator work: random bytes
// (every byte value, invalid UTF-8 included) and values packed with the
// words and characters the prefilter looks for, none of which forms an
// attack the rules match.
func adversarialRequests() []request {
	shape, _ := plan.ShapeByName(plan.ShapeJSON10K)
	rng := rand.New(rand.NewPCG(5, 7))
	random := make([]string, shape.Fields)
	for i := range random {
		b := make([]byte, 40)
		for k := range b {
			b[k] = byte(rng.IntN(256))
		}
		random[i] = string(b)
	}
	words := []string{"select", "union", "and", "or", "sleep", "alert", "script", "bash", "cat", "etc",
		"passwd", "exec", "eval", "char", "concat", "from", "where", "having", "(", ")", "<", ">", ";", "|", "$", "{", "}", "`", "'", "\"", "=", "--", "/*", "*/", "..", "%", "&"}
	flood := make([]string, shape.Fields)
	for i := range flood {
		var b strings.Builder
		for k := 0; k < 8; k++ {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		flood[i] = b.String()
	}
	return []request{bodyOf("random_10k", random), bodyOf("literal_flood_10k", flood)}
}

func bodyOf(name string, values []string) request {
	fields := map[string]string{}
	for i, v := range values {
		fields["f"+strconv.Itoa(i)] = v
	}
	body, err := json.Marshal(fields)
	if err != nil {
		panic(fmt.Sprintf("encoding %s: %v", name, err))
	}
	s := plan.Shape{Name: name, Method: "POST", ContentType: "application/json", Body: body, Bytes: len(body), Fields: len(values)}
	return shapeRequest(s)
}

// TestFlavorsAgree checks that the flavors make bench compares are the same
// WAF: every benign shape passes and every attack (query, header, JSON body,
// the adversarial bodies) is blocked by each of them.
func TestFlavorsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds full CRS four times")
	}
	fs := buildFlavors(t, "full-crs", flavors)
	attack := func(name, query string, header waf.Header) request {
		r := shapeRequest(plan.Shape{Name: name, Method: "GET"})
		r.head.Path += query
		if header.Name != "" {
			r.head.Headers = append(r.head.Headers, header)
		}
		return r
	}
	type verdict struct {
		r    request
		want int
	}
	requests := []verdict{
		{attack("xss_query", "?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E", waf.Header{}), 403},
		{attack("sqli_query", "?id=1%27%20OR%201%3D1--", waf.Header{}), 403},
		{attack("rce_header", "", waf.Header{Name: "user-agent", Value: "() { :; }; /bin/cat /etc/passwd"}), 403},
		{bodyOf("sqli_json", []string{"1 union select password from users"}), 403},
	}
	for _, name := range plan.Shapes() {
		shape, err := plan.ShapeByName(name)
		if err != nil {
			t.Fatal(err)
		}
		requests = append(requests, verdict{shapeRequest(shape), 0})
	}
	for _, r := range adversarialRequests() {
		requests = append(requests, verdict{r, 403})
	}
	for _, req := range requests {
		for _, f := range fs {
			if got := serve(f.filter, req.r); got != req.want {
				t.Errorf("%s, flavor %s: answered %d, want %d", req.r.name, f.name, got, req.want)
			}
		}
	}
}

// BenchmarkFlavors is the go test -bench view of the same requests.
func BenchmarkFlavors(b *testing.B) {
	fs := buildFlavors(b, "full-crs", flavors)
	for _, name := range plan.Shapes() {
		shape, err := plan.ShapeByName(name)
		if err != nil {
			b.Fatal(err)
		}
		r := shapeRequest(shape)
		for _, f := range fs {
			b.Run(fmt.Sprintf("shape=%s/flavor=%s", name, f.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					serve(f.filter, r)
				}
			})
		}
	}
}

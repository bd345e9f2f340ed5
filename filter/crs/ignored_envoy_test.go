package crs

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreruleset/go-ftw/v2/config"
	"github.com/coreruleset/go-ftw/v2/ftwhttp"
	"github.com/coreruleset/go-ftw/v2/test"
	"github.com/rs/zerolog"

	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
)

// proofHeader carries a unique marker on every request the proof test
// builds from headers, so the backend's record names the request it is.
// Raw requests (encoded_request) are sent byte for byte, unmarked; the
// fence request after each one delimits what the backend got for it.
const proofHeader = "X-Proof-Id"

// fenceHeader marks the benign request sent after each case: once the
// backend has it, everything the case could have sent upstream has come.
const fenceHeader = "X-Proof-Fence"

// TestEnvoyIgnoresStopTheAttack replays every envoy entry of the ignore
// list, the request go-ftw sends for that CRS test, through one Envoy with
// the suite's rules in blocking mode, in front of a backend that records
// every byte it gets, and checks the entry's proof: Envoy rejects the
// request, or the WAF blocks it as Envoy normalised it, and the backend
// gets nothing; or it arrives without the attack (passed-harmless), or with
// it (known-gap), exactly as the list says. The suite runs DetectionOnly,
// so a test Envoy rejects only fails there; this test shows what the
// ignore costs a deployment that blocks.
func TestEnvoyIgnoresStopTheAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the envoy ignores through Envoy with the full CRS")
	}
	start := time.Now()
	// go-ftw's request building logs every header at trace level through
	// zerolog's global logger.
	zerolog.SetGlobalLevel(zerolog.ErrorLevel)
	cases, suiteSubset := proofCases(t)
	rec := startRecorder(t)
	p := startEnvoy(t, envoySetup{module: modulePath(t), filterConfig: blockingFilterConfig(t),
		upstreamPort: rec.port, accessLog: true})
	rc, err := newRunnerConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkLoopbackOnly(rc, suiteSubset, p.port); err != nil {
		t.Fatal(err)
	}
	r := &replayer{t: t, p: p, rec: rec}

	// listed counts the list's entries by proof class; gaps are every
	// known gap, listed or not.
	listed := map[string]int{}
	var entries int
	var gaps []string
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			stages := c.stages
			if !c.extra {
				var err error
				if stages, err = stageRequests(rc, c.id, suiteSubset); err != nil {
					t.Fatal(err)
				}
			}
			for i, s := range stages {
				got := r.replay(t, s.raw)
				err := checkProof(c.proof, s, got)
				switch {
				case c.wantErr == "" && err != nil:
					t.Errorf("stage %d: %v\nsent:\n%s\n%s", i, err, quoteLines(s.raw), got.describe())
				case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
					t.Errorf("stage %d: the checks gave %v, want them to fail with %q\n%s", i, err, c.wantErr, got.describe())
				case c.wantErr != "":
					t.Logf("stage %d fails its checks, as it must: %v", i, err)
				}
				t.Logf("%s stage %d: %s; %s", c.proof.class, i, got.answer(), got.upstreamSummary())
			}
		})
		if !c.extra {
			entries++
			listed[c.proof.class]++
		}
		if c.proof.class == proofKnownGap {
			gaps = append(gaps, fmt.Sprintf("%s (%s)", c.id, c.proof.explain))
		}
		p.failIfEnvoyDied(t)
	}
	var counts []string
	for _, class := range proofClasses {
		counts = append(counts, fmt.Sprintf("%s %d", class, listed[class]))
	}
	t.Logf("CRS envoy ignores through Envoy, blocking: %d entries: %s, in %s",
		entries, strings.Join(counts, ", "), time.Since(start).Round(100*time.Millisecond))
	for _, gap := range gaps {
		t.Logf("known gap: %s", gap)
	}
}

// proofCase is one row: an ignore list entry (or an extra case) and its proof.
type proofCase struct {
	id    string
	proof *ignoreProof
	// extra cases are not from the list: they bring their own stages.
	extra  bool
	stages []stageRequest
	// wantErr, for a control, is what its checks must fail with: it shows
	// that a check that should fail does.
	wantErr string
}

// proofCases are the extra cases, then every envoy entry of the ignore
// list; and the suite's units for those entries.
func proofCases(t *testing.T) ([]proofCase, []*test.FTWTest) {
	t.Helper()
	suite, ignored := suiteAndIgnoreList(t)
	cases := extraCases(t)
	var subset []*test.FTWTest
	for _, id := range slices.Sorted(maps.Keys(ignored)) {
		if e := ignored[id]; e.group == "envoy" {
			cases = append(cases, proofCase{id: id, proof: e.proof})
		}
	}
	for _, unit := range suite {
		if e, ok := ignored[unit.Tests[0].IdString()]; ok && e.group == "envoy" {
			subset = append(subset, unit)
		}
	}
	return cases, subset
}

// extraCases are rows that are not in the list. Controls show that the
// WAF blocks and that the checks bite: a plain XSS is blocked before the
// backend; a benign request reaches it; and a valid Referer, which Envoy
// keeps, fails a "stripped" check. Variants of CRS tests 920171-2 and -3
// (chunked GET and HEAD, which the suite now passes) add a Content-Type,
// so that 920640 (a body without one) cannot be what blocks them: 920171
// must, though Envoy consumed Transfer-Encoding before the filter ran.
func extraCases(t testing.TB) []proofCase {
	t.Helper()
	request := func(marker, method, target, body string, extra ...string) stageRequest {
		head := append([]string{method + " " + target + " HTTP/1.1", "Host: localhost", "User-Agent: OWASP CRS test agent",
			"Accept: text/html", proofHeader + ": " + marker}, extra...)
		h := ftwhttp.NewHeader()
		for _, line := range head[1:] {
			name, value, _ := strings.Cut(line, ": ")
			h.Add(name, value)
		}
		raw := strings.Join(append(head, "Connection: close", "", ""), "\r\n") + body
		return stageRequest{raw: []byte(raw), marker: marker, headers: h}
	}
	proof := func(raw rawIgnoreEntry) *ignoreProof {
		raw.Reason = "extra case"
		p, err := parseProof(raw)
		if err != nil {
			t.Fatalf("extra case: %v", err)
		}
		return p
	}
	chunked := func(body string) string { return fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body) }
	const form = "Content-Type: application/x-www-form-urlencoded"
	const te = "Transfer-Encoding: chunked"
	blocked := rawIgnoreEntry{Proof: proofBlocked, Answer: "403 corazawaf_denied_rule_949110"}
	cases := []proofCase{
		{id: "control-xss-blocked", proof: proof(blocked),
			stages: []stageRequest{request("control-xss", "GET", "/get?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E", "")}},
		{id: "control-benign-arrives", proof: proof(rawIgnoreEntry{Proof: proofHarmless, Answer: "200 via_upstream", Harmless: "benign",
			UpstreamHas: []string{`(?m)^GET /get\?control=benign HTTP/1\.1\r$`}}),
			stages: []stageRequest{request("control-benign", "GET", "/get?control=benign", "")}},
		{id: "control-valid-referer-kept", proof: proof(rawIgnoreEntry{Proof: proofHarmless, Answer: "200 via_upstream", Harmless: "no",
			Stripped: []string{"Referer"}}),
			stages: []stageRequest{request("control-referer", "GET", "/get", "", "Referer: https://www.example.com/page")},
			// Envoy forwards a valid Referer.
			wantErr: `the value of Referer ("https://www.example.com/page") reaches the backend`},
		// Envoy consumes Transfer-Encoding before filters run; the module
		// tells Coraza the body came chunked (waf.chunkedOnTheWire), so
		// 920171 fires even when 920640 (no Content-Type) does not.
		{id: "variant-920171-2-with-content-type", proof: proof(blocked),
			stages: []stageRequest{request("variant-920171-2-ct", "GET", "/get", chunked("a=b"), form, te)}},
		{id: "variant-920171-3-with-content-type", proof: proof(blocked),
			stages: []stageRequest{request("variant-920171-3-ct", "HEAD", "/get", chunked("a=b"), form, te)}},
		{id: "variant-920171-2-with-content-type-xss", proof: proof(blocked),
			stages: []stageRequest{request("variant-920171-2-xss", "GET", "/get", chunked("q=%3Cscript%3Ealert(1)%3C%2Fscript%3E"), form, te)}},
	}
	for i := range cases {
		cases[i].extra = true
	}
	return cases
}

// stageRequest is one request as go-ftw would send it.
type stageRequest struct {
	raw     []byte
	marker  string          // the proofHeader value, "" for a raw request
	headers *ftwhttp.Header // the test's headers, nil for a raw request
}

// stageRequests builds the requests of test id the way go-ftw's runner
// does (its request building is not exported; this follows
// runner.getRequestFromTest): an encoded_request is sent as its bytes;
// otherwise the request line, the test's headers in order and its data,
// with go-ftw's autocompletion unless the test turns it off. Marked
// requests get proofHeader after the test's headers.
func stageRequests(rc *config.RunnerConfig, id string, units []*test.FTWTest) ([]stageRequest, error) {
	var out []stageRequest
	for _, unit := range units {
		tc := unit.Tests[0]
		if tc.IdString() != id {
			continue
		}
		for i := range tc.Stages {
			in := test.NewInput(&tc.Stages[i].Input)
			test.ApplyInputOverrides(rc, in)
			if in.EncodedRequest != "" {
				raw, err := base64.StdEncoding.DecodeString(in.EncodedRequest)
				if err != nil {
					return nil, fmt.Errorf("%s: encoded_request: %w", id, err)
				}
				out = append(out, stageRequest{raw: raw})
				continue
			}
			marker := fmt.Sprintf("%s-%d", id, len(out))
			sent := in.GetHeaders().Clone()
			headers := in.GetHeaders().Clone()
			headers.Add(proofHeader, marker)
			autocomplete := in.AutocompleteHeaders == nil || *in.AutocompleteHeaders
			line := &ftwhttp.RequestLine{Method: in.GetMethod(), URI: in.GetURI(), Version: in.GetVersion()}
			raw, err := ftwhttp.BuildRequest(ftwhttp.NewRequest(line, headers, in.GetData(), autocomplete))
			if err != nil {
				return nil, fmt.Errorf("%s: building the request: %w", id, err)
			}
			out = append(out, stageRequest{raw: raw, marker: marker, headers: sent})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no such test in the suite", id)
	}
	return out, nil
}

// blockingFilterConfig is the suite's rule set (crsTestDirectives: CRS at
// paranoia level 4 with the suite's limits) with the engine blocking: the
// recommended configuration's DetectionOnly is overridden, and rule 900005
// no longer switches transactions to DetectionOnly.
func blockingFilterConfig(t testing.TB) string {
	t.Helper()
	const detectionOnly = "ctl:ruleEngine=DetectionOnly,"
	var directives []string
	switched := 0
	for _, d := range crsTestDirectives {
		if strings.Contains(d, detectionOnly) {
			d = strings.Replace(d, detectionOnly, "", 1)
			switched++
		}
		directives = append(directives, d)
		if d == "Include @coraza.conf-recommended" {
			directives = append(directives, "SecRuleEngine On")
			switched++
		}
	}
	if switched != 2 {
		t.Fatalf("crsTestDirectives changed: cannot switch it to blocking (%d of 2 edits)", switched)
	}
	b, err := json.Marshal(map[string]any{"directives": directives})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// replayer sends cases one at a time and collects what each caused.
type replayer struct {
	t     *testing.T
	p     *proxy
	rec   *recorder
	fence int
}

// outcome is what one request caused: the client's answer, Envoy's access
// log lines for it, and every connection the backend got for it.
type outcome struct {
	status   int // 0: no HTTP answer
	readErr  error
	logLines []envoyconfig.AccessLogEntry
	upstream []arrival
}

// replay sends raw to Envoy, then a fence request, and returns what came of
// raw: the backend connections opened before the fence's, and the access
// log lines written before the fence's.
func (r *replayer) replay(t *testing.T, raw []byte) outcome {
	t.Helper()
	connsBefore := r.rec.count()
	logBefore := len(r.accessLog(t))
	var o outcome
	o.status, o.readErr = exchange(r.p.port, raw)

	r.fence++
	fencePath := fmt.Sprintf("/proof-fence/%d", r.fence)
	fence := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: OWASP CRS test agent\r\nAccept: text/html\r\n%s: %d\r\nConnection: close\r\n\r\n",
		fencePath, fenceHeader, r.fence)
	if status, err := exchange(r.p.port, []byte(fence)); status != http.StatusOK {
		t.Fatalf("the fence request after the case got %d (%v), want 200\n%s", status, err, r.p.logTail(20))
	}
	fenceConn, err := r.rec.waitFor(connsBefore, fenceHeader, strconv.Itoa(r.fence), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if o.upstream, err = r.rec.settled(connsBefore, fenceConn, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		lines := r.accessLog(t)[logBefore:]
		i := slices.IndexFunc(lines, func(e envoyconfig.AccessLogEntry) bool { return e.Path == fencePath })
		if i >= 0 {
			o.logLines = lines[:i]
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fence request is not in Envoy's access log after 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *replayer) accessLog(t *testing.T) []envoyconfig.AccessLogEntry {
	t.Helper()
	data, err := os.ReadFile(r.p.accessLogPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var entries []envoyconfig.AccessLogEntry
	for line := range strings.Lines(string(data)) {
		if !strings.HasSuffix(line, "\n") {
			break // being written
		}
		var e envoyconfig.AccessLogEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("access log line %q: %v", line, err)
		}
		entries = append(entries, e)
	}
	return entries
}

// exchange writes raw on a new connection to Envoy, as go-ftw does, and
// reads one answer. Status 0 means Envoy closed the connection (or went
// quiet) without an HTTP answer.
func exchange(port int, raw []byte) (int, error) {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", loopback, port), 3*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return 0, err
	}
	if _, err := conn.Write(raw); err != nil {
		return 0, err
	}
	// The method decides whether the answer has a body (HEAD's has none).
	method, _, _ := bytes.Cut(raw, []byte(" "))
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: string(method)})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}

// checkProof compares an outcome with the proof the list gives.
func checkProof(proof *ignoreProof, s stageRequest, o outcome) error {
	var errs []string
	if o.status != proof.status {
		errs = append(errs, fmt.Sprintf("status %d (%v), want %d", o.status, o.readErr, proof.status))
	}
	if details := o.details(); details != proof.details {
		errs = append(errs, fmt.Sprintf("response code details %q, want %q", details, proof.details))
	}
	if !proof.reachesBackend() {
		if len(o.upstream) > 0 {
			errs = append(errs, fmt.Sprintf("%s: the backend got %d connection(s), want none", proof.class, len(o.upstream)))
		}
	} else if err := checkArrival(proof, s, o.upstream); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// checkArrival checks what reached the backend: one connection carrying
// the case's request (its marker, when it has one), and the upstream checks.
func checkArrival(proof *ignoreProof, s stageRequest, upstream []arrival) error {
	if len(upstream) != 1 || len(upstream[0].requests) != 1 {
		reqs := 0
		for _, a := range upstream {
			reqs += len(a.requests)
		}
		return fmt.Errorf("%s: the backend got %d connection(s) and %d request(s), want one request", proof.class, len(upstream), reqs)
	}
	a, req := upstream[0], upstream[0].requests[0]
	var errs []string
	if s.marker != "" && req.header.Get(proofHeader) != s.marker {
		errs = append(errs, fmt.Sprintf("the backend's request has %s %q, want %q", proofHeader, req.header.Get(proofHeader), s.marker))
	}
	for _, name := range proof.stripped {
		if s.headers == nil {
			errs = append(errs, fmt.Sprintf("stripped: %s, but the test sends a raw request", name))
			continue
		}
		sent := s.headers.GetAll(name)
		if len(sent) == 0 {
			errs = append(errs, fmt.Sprintf("stripped: %s, but the test sends no %s", name, name))
		}
		if got := req.header.Values(name); len(got) > 0 {
			errs = append(errs, fmt.Sprintf("the backend got %s %q", name, got))
		}
		for _, h := range sent {
			if bytes.Contains(a.raw, []byte(h.Value)) {
				errs = append(errs, fmt.Sprintf("the value of %s (%q) reaches the backend", name, h.Value))
			}
		}
	}
	for _, re := range proof.upstreamHas {
		if !re.Match(a.raw) {
			errs = append(errs, fmt.Sprintf("upstream_has %q does not match what the backend got", re))
		}
	}
	for _, re := range proof.upstreamLacks {
		// A pattern names something the request carries, or its absence
		// upstream proves nothing.
		if !re.Match(s.raw) {
			errs = append(errs, fmt.Sprintf("upstream_lacks %q does not match what the test sends", re))
		}
		if m := re.Find(a.raw); m != nil {
			errs = append(errs, fmt.Sprintf("upstream_lacks %q matches %q in what the backend got", re, m))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// details is the response code details of the case's one access log line,
// "" if there is none, or a list if there are several.
func (o outcome) details() string {
	if len(o.logLines) == 1 {
		return o.logLines[0].ResponseCodeDetails
	}
	var all []string
	for _, e := range o.logLines {
		all = append(all, e.ResponseCodeDetails)
	}
	return fmt.Sprintf("%d access log lines %v", len(o.logLines), all)
}

func (o outcome) answer() string {
	return fmt.Sprintf("%d %s", o.status, o.details())
}

func (o outcome) upstreamSummary() string {
	if len(o.upstream) == 0 {
		return "backend got nothing"
	}
	var b strings.Builder
	for _, a := range o.upstream {
		head, _, _ := bytes.Cut(a.raw, []byte("\r\n\r\n"))
		fmt.Fprintf(&b, "backend got %d bytes, head %q", len(a.raw), head)
	}
	return b.String()
}

func (o outcome) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "answer: %s\n", o.answer())
	for i, a := range o.upstream {
		fmt.Fprintf(&b, "backend connection %d (%d requests):\n%s\n", i, len(a.requests), quoteLines(a.raw))
	}
	if len(o.upstream) == 0 {
		b.WriteString("backend: nothing\n")
	}
	return b.String()
}

// quoteLines prints raw bytes a line at a time, quoted, so CRs, NULs and
// non-ASCII bytes show.
func quoteLines(raw []byte) string {
	var b strings.Builder
	for line := range strings.Lines(string(raw)) {
		fmt.Fprintf(&b, "  %q\n", line)
	}
	return b.String()
}

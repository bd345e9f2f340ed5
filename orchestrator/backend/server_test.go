package backend

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func startServer(t *testing.T) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestHandlerReplies(t *testing.T) {
	s := startServer(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // 160 KB: several copy buffers
	tests := []struct {
		name      string
		method    string
		query     string
		body      []byte
		wantCT    string
		wantReply []byte
	}{
		{"get", http.MethodGet, "", nil, "text/plain; charset=utf-8", []byte("ok\n")},
		{"post", http.MethodPost, "", []byte(`{"a":1}`), "text/plain; charset=utf-8", []byte("ok\n")},
		{"large post", http.MethodPost, "", big, "text/plain; charset=utf-8", []byte("ok\n")},
		{"unrelated query", http.MethodGet, "x=1", nil, "text/plain; charset=utf-8", []byte("ok\n")},
		{"echo body", http.MethodPost, "reply_ct=application/json", []byte(`{"echo":true}`), "application/json", []byte(`{"echo":true}`)},
		{"echo large body", http.MethodPost, "reply_ct=application/octet-stream", big, "application/octet-stream", big},
		{"reply_body wins", http.MethodPost, "reply_ct=text/html&reply_body=" + url.QueryEscape("<b>hi</b>"), []byte("ignored"), "text/html", []byte("<b>hi</b>")},
		{"empty reply_body", http.MethodGet, "reply_ct=text/plain&reply_body=", nil, "text/plain", []byte{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, s.URL()+"/p?"+tt.query, bytes.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, reply := do(t, req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.wantCT {
				t.Errorf("Content-Type %q, want %q", got, tt.wantCT)
			}
			if !bytes.Equal(reply, tt.wantReply) {
				t.Errorf("reply %.60q, want %.60q", reply, tt.wantReply)
			}
			if got, want := resp.Header.Get(HeaderBodyBytes), fmt.Sprint(len(tt.body)); got != want {
				t.Errorf("%s %s, want %s", HeaderBodyBytes, got, want)
			}
			if got, want := resp.Header.Get(HeaderBodySHA256), sha(tt.body); got != want {
				t.Errorf("%s %s, want %s", HeaderBodySHA256, got, want)
			}
		})
	}
}

func TestStatsAndRecent(t *testing.T) {
	s := startServer(t)
	bodies := []string{"", "abc", strings.Repeat("x", 1000)}
	for i, b := range bodies {
		req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/r/%d", s.URL(), i), strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "wafsweep.test"
		req.Header.Set("X-Test", fmt.Sprint(i))
		do(t, req)
	}
	if got, want := s.Stats(), (Stats{Requests: 3, BodyBytes: 1003}); got != want {
		t.Errorf("Stats %+v, want %+v", got, want)
	}
	recent := s.Recent()
	if len(recent) != len(bodies) {
		t.Fatalf("Recent has %d records, want %d", len(recent), len(bodies))
	}
	for i, rec := range recent {
		want := RequestRecord{Method: http.MethodPut, Path: fmt.Sprintf("/r/%d", i), Host: "wafsweep.test",
			BodyBytes: int64(len(bodies[i])), BodySHA256: sha([]byte(bodies[i]))}
		if rec.Method != want.Method || rec.Path != want.Path || rec.Host != want.Host ||
			rec.BodyBytes != want.BodyBytes || rec.BodySHA256 != want.BodySHA256 {
			t.Errorf("record %d = %+v, want %+v", i, rec, want)
		}
		if got := rec.Header.Get("X-Test"); got != fmt.Sprint(i) {
			t.Errorf("record %d X-Test %q", i, got)
		}
	}
}

func TestRecentKeepsNewestInOrder(t *testing.T) {
	var ring recentRing
	total := RecentCapacity + 10
	for i := range total {
		ring.add(RequestRecord{Path: fmt.Sprint(i)})
	}
	got := ring.snapshot()
	if len(got) != RecentCapacity {
		t.Fatalf("len %d, want %d", len(got), RecentCapacity)
	}
	for i, rec := range got {
		if want := fmt.Sprint(total - RecentCapacity + i); rec.Path != want {
			t.Fatalf("record %d path %s, want %s", i, rec.Path, want)
		}
	}
}

func TestRecentReturnsCopies(t *testing.T) {
	var ring recentRing
	ring.add(RequestRecord{Header: http.Header{"A": {"1"}}})
	ring.snapshot()[0].Header.Set("A", "changed")
	if got := ring.snapshot()[0].Header.Get("A"); got != "1" {
		t.Errorf("stored header changed to %q through a snapshot", got)
	}
}

func TestConcurrentRequestsAreCounted(t *testing.T) {
	s := startServer(t)
	const workers, perWorker = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range perWorker {
				resp, err := http.Post(s.URL()+"/", "text/plain", strings.NewReader("12345"))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if got, want := s.Stats(), (Stats{Requests: workers * perWorker, BodyBytes: workers * perWorker * 5}); got != want {
		t.Errorf("Stats %+v, want %+v", got, want)
	}
}

func TestCloseIsIdempotentAndStopsServing(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := s.URL()
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	client := http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get(url); err == nil {
		resp.Body.Close()
		t.Fatal("request after Close succeeded")
	}
}

func TestStartBadAddress(t *testing.T) {
	if _, err := Start("127.0.0.1:notaport"); err == nil || !strings.Contains(err.Error(), "backend: listen") {
		t.Fatalf("err = %v, want a listen error", err)
	}
}

// syncBuffer lets the test read what run prints from another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The subcommand serves until cancelled, then says in its log how many
// requests it served and how many of them were marked as attacks: the
// sweep's proof that no attack got past a WAF in front of it.
func TestRunServesUntilCancelledAndCountsAttacks(t *testing.T) {
	addr, stop := startRun(t, "--listen", "127.0.0.1:0")
	for _, marked := range []bool{false, true, false} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		if marked {
			req.Header.Set(HeaderAttack, "SQLi in the query")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if log, want := stop(), "backend: served 3 requests, 1 of them marked "+HeaderAttack+"\n"; log != want {
		t.Errorf("log %q, want %q", log, want)
	}
}

// startRun runs the subcommand with args until the returned stop, which
// checks it exits 0 and returns what it wrote to stderr, and returns the
// address it printed.
func startRun(t *testing.T, args ...string) (addr string, stop func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() { exit <- run(ctx, args, &stdout, &stderr) }()
	for deadline := time.Now().Add(5 * time.Second); addr == "" && time.Now().Before(deadline); {
		if _, err := fmt.Sscanf(stdout.String(), "listening on %s\n", &addr); err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if addr == "" {
		cancel()
		t.Fatalf("no address printed; stderr %q", stderr.String())
	}
	return addr, func() string {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("exit code %d, stderr %q", code, stderr.String())
		}
		return stderr.String()
	}
}

func TestRunRejectsBadArguments(t *testing.T) {
	for _, args := range [][]string{{"--nope"}, {"extra"}, {"--listen", "127.0.0.1:notaport"}} {
		var stdout, stderr syncBuffer
		if code := run(context.Background(), args, &stdout, &stderr); code == 0 {
			t.Errorf("run(%q) exit 0, want non-zero", args)
		}
		if stderr.String() == "" {
			t.Errorf("run(%q) printed no error", args)
		}
	}
}

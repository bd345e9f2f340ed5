package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// This file holds the evasion matrix's wire-level clients and its recording
// backend. Go's HTTP clients choose their own framing (one write per body,
// DATA frames as large as the window allows) and refuse to send repeated or
// odd headers; an evasion test needs to choose where each frame starts,
// when it is sent, and which headers repeat, so both clients write the
// protocol themselves.

// framing is how a request body is delimited on the wire.
type framing int

const (
	// chunked: HTTP/1.1 Transfer-Encoding: chunked, one chunk per frame;
	// HTTP/2 DATA frames without a content-length header.
	chunked framing = iota
	// lengthDeclared: Content-Length of the whole body; over HTTP/2 the
	// content-length header too.
	lengthDeclared
	// undeclared: HTTP/1.1 bytes after the headers with neither header (a
	// tunnel's data); over HTTP/2 the same as chunked.
	undeclared
)

// wireRequest is one request as the client puts it on the wire.
type wireRequest struct {
	method, path string
	// headers are sent in order after Host, User-Agent and Accept; a
	// repeated name is sent as a repeated field.
	headers [][2]string
	frames  []string // body frames; nil: no body
	framing framing
	// pause separates the writes of the frames. With no pause an HTTP/1.1
	// request goes out in one write (Envoy then reads it as one buffer);
	// HTTP/2 frames stay frames either way.
	pause time.Duration
	// expect100 sends Expect: 100-continue and holds the body until the 100
	// arrives (at most 5 s).
	expect100 bool
	trailers  [][2]string // end the body with trailers
}

func (r wireRequest) body() string { return strings.Join(r.frames, "") }

func (r wireRequest) methodOrDefault() string {
	switch {
	case r.method != "":
		return r.method
	case r.frames != nil:
		return "POST"
	default:
		return "GET"
	}
}

// wireResponse is what came back.
type wireResponse struct {
	status  int   // final status; 0 when none came (reset, closed)
	interim []int // 1xx statuses before it
	header  http.Header
	body    string
	// ended says why the exchange ended without a complete answer (a reset,
	// a GOAWAY, a closed connection); "" when it ended normally.
	ended string
}

func (r wireResponse) String() string {
	s := fmt.Sprintf("status %d", r.status)
	if g := r.header.Values("Grpc-Status"); len(g) > 0 {
		s += fmt.Sprintf(" grpc-status %s", strings.Join(g, ","))
	}
	if len(r.interim) > 0 {
		s += fmt.Sprintf(" (after %v)", r.interim)
	}
	if r.ended != "" {
		s += " [" + r.ended + "]"
	}
	return s
}

// tunnelLinger keeps an upgraded HTTP/1.1 connection open after its 101, so
// the data already sent on it is delivered before the client closes it.
const tunnelLinger = 300 * time.Millisecond

// sendH1 runs one raw HTTP/1.1 exchange on a new connection.
func (p *proxy) sendH1(r wireRequest) wireResponse {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), 5*time.Second)
	if err != nil {
		return wireResponse{ended: "dial: " + err.Error()}
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))

	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: shop.wafsweep.test\r\nUser-Agent: wafsweep-e2e/1.0\r\nAccept: */*\r\n", r.methodOrDefault(), r.path)
	for _, h := range r.headers {
		fmt.Fprintf(&head, "%s: %s\r\n", h[0], h[1])
	}
	if r.expect100 {
		head.WriteString("Expect: 100-continue\r\n")
	}
	var pieces []string
	switch {
	case r.frames == nil:
	case r.framing == chunked:
		head.WriteString("Transfer-Encoding: chunked\r\n")
		for _, f := range r.frames {
			if f != "" { // an empty chunk would end the body
				pieces = append(pieces, fmt.Sprintf("%x\r\n%s\r\n", len(f), f))
			}
		}
		var end strings.Builder
		end.WriteString("0\r\n")
		for _, h := range r.trailers {
			fmt.Fprintf(&end, "%s: %s\r\n", h[0], h[1])
		}
		end.WriteString("\r\n")
		// The terminator rides with the last chunk: the last frame is the
		// one that ends the body, as with HTTP/2's END_STREAM.
		if len(pieces) == 0 {
			pieces = []string{end.String()}
		} else {
			pieces[len(pieces)-1] += end.String()
		}
	case r.framing == lengthDeclared:
		fmt.Fprintf(&head, "Content-Length: %d\r\n", len(r.body()))
		pieces = r.frames
	default:
		pieces = r.frames
	}
	head.WriteString("\r\n")

	gotContinue := make(chan struct{})
	var continueOnce sync.Once
	done := make(chan struct{})
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		if r.pause == 0 && !r.expect100 {
			io.WriteString(conn, head.String()+strings.Join(pieces, ""))
			return
		}
		if _, err := io.WriteString(conn, head.String()); err != nil {
			return
		}
		if r.expect100 {
			select {
			case <-gotContinue:
			case <-done:
				return
			case <-time.After(5 * time.Second):
				return // no 100: the body is never sent
			}
		}
		for i, piece := range pieces {
			if i > 0 && r.pause > 0 {
				select {
				case <-time.After(r.pause):
				case <-done:
					return
				}
			}
			if _, err := io.WriteString(conn, piece); err != nil {
				return // the proxy answered and closed: the rest is moot
			}
		}
	}()

	var out wireResponse
	br := bufio.NewReader(conn)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			out.ended = "closed: " + err.Error()
			break
		}
		if resp.StatusCode/100 == 1 && resp.StatusCode != http.StatusSwitchingProtocols {
			out.interim = append(out.interim, resp.StatusCode)
			if resp.StatusCode == http.StatusContinue {
				continueOnce.Do(func() { close(gotContinue) })
			}
			continue
		}
		out.status = resp.StatusCode
		b, err := io.ReadAll(resp.Body)
		out.body = string(b)
		if err != nil {
			out.ended = "body: " + err.Error()
		}
		out.header = resp.Header
		for k, v := range resp.Trailer {
			out.header[k] = append(out.header[k], v...)
		}
		if out.status == http.StatusSwitchingProtocols {
			<-wrote
			time.Sleep(tunnelLinger)
		}
		break
	}
	close(done)
	conn.Close()
	<-wrote
	if out.header == nil {
		out.header = http.Header{}
	}
	return out
}

// sendH2 runs one raw HTTP/2 (prior-knowledge h2c) exchange, stream 1 on a
// new connection, honouring Envoy's flow control and frame size.
func (p *proxy) sendH2(r wireRequest) wireResponse {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), 5*time.Second)
	if err != nil {
		return wireResponse{ended: "dial: " + err.Error()}
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return wireResponse{ended: "preface: " + err.Error()}
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(64<<10, nil)
	var wmu sync.Mutex // the reader acks while the writer sends
	write := func(f func() error) error {
		wmu.Lock()
		defer wmu.Unlock()
		return f()
	}
	// A large receive window: the client never has to send WINDOW_UPDATEs.
	const recvWindow = 1 << 30
	write(func() error {
		return fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: recvWindow})
	})
	write(func() error { return fr.WriteWindowUpdate(0, recvWindow-65535) })

	var (
		mu            sync.Mutex // guards the send windows and the frame size
		connWindow    int64      = 65535
		streamWindow  int64      = 65535
		streamInitial int64      = 65535
		maxFrame                 = 16384
	)
	var out wireResponse
	out.header = http.Header{}
	gotContinue := make(chan struct{})
	var continueOnce sync.Once
	done := make(chan struct{}) // closed by the reader when the stream ended
	readerExited := make(chan struct{})
	go func() {
		defer close(readerExited)
		defer close(done)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				if out.ended == "" {
					out.ended = "closed: " + err.Error()
				}
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if f.IsAck() {
					continue
				}
				mu.Lock()
				f.ForeachSetting(func(s http2.Setting) error {
					switch s.ID {
					case http2.SettingInitialWindowSize:
						streamWindow += int64(s.Val) - streamInitial
						streamInitial = int64(s.Val)
					case http2.SettingMaxFrameSize:
						maxFrame = int(s.Val)
					}
					return nil
				})
				mu.Unlock()
				write(fr.WriteSettingsAck)
			case *http2.WindowUpdateFrame:
				mu.Lock()
				if f.StreamID == 0 {
					connWindow += int64(f.Increment)
				} else if f.StreamID == 1 {
					streamWindow += int64(f.Increment)
				}
				mu.Unlock()
			case *http2.PingFrame:
				if !f.IsAck() {
					data := f.Data
					write(func() error { return fr.WritePing(true, data) })
				}
			case *http2.MetaHeadersFrame:
				if f.StreamID != 1 {
					continue
				}
				code, _ := strconv.Atoi(f.PseudoValue("status"))
				switch {
				case code/100 == 1:
					out.interim = append(out.interim, code)
					if code == http.StatusContinue {
						continueOnce.Do(func() { close(gotContinue) })
					}
				case code != 0 && out.status == 0:
					out.status = code
					fallthrough
				default: // the response's headers, or its trailers
					for _, hf := range f.RegularFields() {
						out.header.Add(hf.Name, hf.Value)
					}
				}
				if f.StreamEnded() {
					return
				}
			case *http2.DataFrame:
				if f.StreamID == 1 {
					out.body += string(f.Data())
					if f.StreamEnded() {
						return
					}
				}
			case *http2.RSTStreamFrame:
				if f.StreamID == 1 {
					out.ended = "reset " + f.ErrCode.String()
					return
				}
			case *http2.GoAwayFrame:
				out.ended = "goaway " + f.ErrCode.String()
				if f.LastStreamID < 1 {
					return // stream 1 was never processed
				}
			}
		}
	}()

	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fields := [][2]string{{":method", r.methodOrDefault()}, {":scheme", "http"}, {":authority", "shop.wafsweep.test"}, {":path", r.path},
		{"user-agent", "wafsweep-e2e/1.0"}, {"accept", "*/*"}}
	if r.expect100 {
		fields = append(fields, [2]string{"expect", "100-continue"})
	}
	if r.frames != nil && r.framing == lengthDeclared {
		fields = append(fields, [2]string{"content-length", strconv.Itoa(len(r.body()))})
	}
	for _, h := range append(fields, r.headers...) {
		enc.WriteField(hpack.HeaderField{Name: strings.ToLower(h[0]), Value: h[1]})
	}
	noBody := r.frames == nil && r.trailers == nil
	write(func() error {
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true, EndStream: noBody})
	})
	ended := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	// sendData writes one frame of the request, split to the frame size and
	// waiting for window; false when the stream ended first.
	sendData := func(data string, endStream bool) bool {
		for first := true; first || data != ""; first = false {
			mu.Lock()
			n := min(len(data), maxFrame)
			mu.Unlock()
			for {
				if ended() {
					return false
				}
				mu.Lock()
				ok := connWindow >= int64(n) && streamWindow >= int64(n)
				if ok {
					connWindow -= int64(n)
					streamWindow -= int64(n)
				}
				mu.Unlock()
				if ok {
					break
				}
				time.Sleep(time.Millisecond)
			}
			chunk := data[:n]
			data = data[n:]
			if write(func() error { return fr.WriteData(1, endStream && data == "", []byte(chunk)) }) != nil {
				return false
			}
		}
		return true
	}
	sending := !noBody
	if sending && r.expect100 {
		select {
		case <-gotContinue:
		case <-done:
			sending = false
		case <-time.After(5 * time.Second):
			sending = false // no 100: the body is never sent
		}
	}
	for i, frame := range r.frames {
		if !sending {
			break
		}
		if i > 0 && r.pause > 0 {
			select {
			case <-time.After(r.pause):
			case <-done:
			}
		}
		sending = sendData(frame, i == len(r.frames)-1 && r.trailers == nil)
	}
	if sending && r.trailers != nil {
		block.Reset()
		for _, h := range r.trailers {
			enc.WriteField(hpack.HeaderField{Name: strings.ToLower(h[0]), Value: h[1]})
		}
		write(func() error {
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true, EndStream: true})
		})
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
	}
	conn.Close()
	<-readerExited
	return out
}

// recorder is the evasion matrix's backend: it records every request that
// reaches it, by path, with its whole body (or, for an upgrade, the tunnel's
// bytes), and answers with canned replies registered by path.
type recorder struct {
	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	arrivals map[string][]*arrival
	replies  map[string][]string // response frames by request path
}

// arrival is one request as the backend saw it. It is recorded when its
// headers arrive, before its body: a request the proxy let start counts.
type arrival struct {
	method, contentType string
	query               string      // the request target's query, as received
	header              http.Header // as the backend's server parsed it
	transferEncoding    []string
	body                []byte
	tunnel              bool   // an upgrade: body is what came through the tunnel
	err                 string // reading the body failed (e.g. the proxy reset it)
}

// tunnelIdle ends the recording of a tunnel's bytes.
const tunnelIdle = 300 * time.Millisecond

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &recorder{ln: ln, arrivals: map[string][]*arrival{}, replies: map[string][]string{}}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go rc.srv.Serve(ln)
	t.Cleanup(func() { rc.srv.Close() })
	return rc
}

func (rc *recorder) port() int { return rc.ln.Addr().(*net.TCPAddr).Port }

// reply makes the backend answer path with these frames, each written and
// flushed on its own, 20 ms apart, so the proxy receives them as separate
// body frames.
func (rc *recorder) reply(path string, frames []string) {
	rc.mu.Lock()
	rc.replies[path] = frames
	rc.mu.Unlock()
}

// at returns copies of what reached path.
func (rc *recorder) at(path string) []arrival {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []arrival
	for _, a := range rc.arrivals[path] {
		c := *a
		c.body = bytes.Clone(a.body)
		out = append(out, c)
	}
	return out
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := &arrival{method: r.Method, query: r.URL.RawQuery, contentType: strings.Join(r.Header.Values("Content-Type"), " | "), header: r.Header.Clone(),
		transferEncoding: r.TransferEncoding, tunnel: r.Header.Get("Upgrade") != ""}
	rc.mu.Lock()
	rc.arrivals[r.URL.Path] = append(rc.arrivals[r.URL.Path], a)
	frames := rc.replies[r.URL.Path]
	rc.mu.Unlock()
	if a.tunnel {
		rc.tunnel(w, r, a)
		return
	}
	body, err := io.ReadAll(r.Body)
	rc.mu.Lock()
	a.body = body
	if err != nil {
		a.err = err.Error()
	}
	rc.mu.Unlock()
	if err != nil {
		http.Error(w, "recorder: "+err.Error(), http.StatusBadRequest)
		return
	}
	if frames == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	for i, f := range frames {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		io.WriteString(w, f)
		w.(http.Flusher).Flush()
	}
}

// tunnel accepts an upgrade (101) and records the bytes that come through
// it, as they come, until the client has been quiet for tunnelIdle.
func (rc *recorder) tunnel(w http.ResponseWriter, r *http.Request, a *arrival) {
	conn, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", r.Header.Get("Upgrade"))
	if rw.Flush() != nil {
		return
	}
	buf := make([]byte, 32<<10)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		conn.SetReadDeadline(time.Now().Add(tunnelIdle))
		n, err := rw.Read(buf)
		rc.mu.Lock()
		a.body = append(a.body, buf[:n]...)
		rc.mu.Unlock()
		if err != nil {
			return
		}
	}
}

package backend

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Response headers and query parameters understood by the handler.
const (
	HeaderBodyBytes  = "X-Backend-Body-Bytes"
	HeaderBodySHA256 = "X-Backend-Body-Sha256"
	// QueryReplyContentType makes the reply echo the request body (or
	// QueryReplyBody) with this Content-Type.
	QueryReplyContentType = "reply_ct"
	QueryReplyBody        = "reply_body"
	// HeaderAttack marks a request the sweep sends as an attack: the
	// backend counts those that reach it (Stats.Attacks), which must be
	// none behind a WAF that blocks them.
	HeaderAttack = "X-Wafsweep-Attack"
)

var okBody = []byte("ok\n")

// scratch is per-request working memory, pooled so the hot path does not
// allocate a hasher and copy buffer for every request.
type scratch struct {
	hasher hash.Hash
	copy   []byte
	echo   bytes.Buffer
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{hasher: sha256.New(), copy: make([]byte, 32<<10)}
}}

// maxPooledEcho keeps one large echoed body from pinning memory in the pool.
const maxPooledEcho = 1 << 20

func releaseScratch(sc *scratch) {
	if sc.echo.Cap() > maxPooledEcho {
		sc.echo = bytes.Buffer{}
	}
	scratchPool.Put(sc)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	sc := scratchPool.Get().(*scratch)
	defer releaseScratch(sc)
	sc.hasher.Reset()
	sc.echo.Reset()

	replyType, replyBody, echo := replyOptions(r)
	sink := io.Writer(sc.hasher)
	if echo && replyBody == nil {
		sink = io.MultiWriter(sc.hasher, &sc.echo)
	}
	n, err := io.CopyBuffer(sink, r.Body, sc.copy)
	var sum [sha256.Size]byte
	digest := hex.EncodeToString(sc.hasher.Sum(sum[:0]))

	s.cost.spend()
	s.requests.Add(1)
	if _, marked := r.Header[HeaderAttack]; marked {
		s.attacks.Add(1)
	}
	s.bodyBytes.Add(n)
	// net/http builds a fresh Header map per request and never reuses it,
	// so keeping the reference (not a copy) is safe and saves an allocation.
	s.recent.add(RequestRecord{Method: r.Method, Path: r.URL.Path, Host: r.Host, Header: r.Header, BodyBytes: n, BodySHA256: digest, Proto: r.Proto})
	if err != nil {
		http.Error(w, "backend: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if isWebSocketHandshake(r) {
		switchProtocols(w, r)
		return
	}

	h := w.Header()
	h[HeaderBodyBytes] = []string{strconv.FormatInt(n, 10)}
	h[HeaderBodySHA256] = []string{digest}
	if !echo {
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		_, _ = w.Write(okBody)
		return
	}
	h["Content-Type"] = []string{replyType}
	if replyBody != nil {
		_, _ = io.WriteString(w, *replyBody)
		return
	}
	_, _ = w.Write(sc.echo.Bytes())
}

// replyOptions reads reply_ct and reply_body; echo is true when the reply
// should carry a body other than "ok\n".
func replyOptions(r *http.Request) (contentType string, body *string, echo bool) {
	if r.URL.RawQuery == "" {
		return "", nil, false // the common case: skip parsing the query
	}
	q := r.URL.Query()
	contentType = q.Get(QueryReplyContentType)
	if contentType == "" {
		return "", nil, false
	}
	if q.Has(QueryReplyBody) {
		b := q.Get(QueryReplyBody)
		body = &b
	}
	return contentType, body, true
}

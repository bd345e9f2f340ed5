package backend

import (
	"crypto/sha1"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"time"
)

// webSocketGUID is RFC 6455's fixed key suffix for Sec-WebSocket-Accept.
const webSocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// isWebSocketHandshake reports an RFC 6455 opening handshake: the backend
// then switches protocols, so tests can prove a proxy lets a real WebSocket
// through (a 200 would not show that the upgrade worked).
func isWebSocketHandshake(r *http.Request) bool {
	return r.Method == http.MethodGet &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		headerHasToken(r.Header, "Connection", "upgrade") &&
		r.Header.Get("Sec-WebSocket-Key") != ""
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// switchProtocols answers 101 and then echoes the raw bytes it receives
// (it does not parse WebSocket frames) until the peer closes or 30 s pass.
func switchProtocols(w http.ResponseWriter, r *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "backend: cannot switch protocols", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + webSocketGUID))
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
	if rw.Flush() != nil {
		return
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	_, _ = io.Copy(conn, rw)
}

package abi

/*
#include <stdlib.h>
#include "abi.h"
*/
import "C"

import (
	"runtime"
	"strings"
	"unsafe"

	"github.com/wafsweep/wafsweep/filter/waf"
)

// Attribute ids: positions in Envoy's envoy_dynamic_module_type_attribute_id.
const (
	attrRequestProtocol    = 10
	attrSourceAddress      = 24
	attrSourcePort         = 25
	attrDestinationAddress = 26
	attrDestinationPort    = 27
)

// stream is the Envoy side of one HTTP stream: the callbacks a hook may use.
type stream struct {
	ptr C.envoy_dynamic_module_type_http_filter_envoy_ptr
}

// headers copies a header map out of Envoy, pseudo-headers included.
func (s stream) headers(kind C.envoy_dynamic_module_type_http_header_type) []waf.Header {
	n := C.envoy_dynamic_module_callback_http_get_headers_size(s.ptr, kind)
	if n == 0 {
		return nil
	}
	raw := make([]C.envoy_dynamic_module_type_envoy_http_header, n)
	if !C.envoy_dynamic_module_callback_http_get_headers(s.ptr, kind, &raw[0]) {
		return nil
	}
	out := make([]waf.Header, 0, n)
	for _, h := range raw {
		out = append(out, waf.Header{
			Name:  envoyString(h.key_ptr, h.key_length),
			Value: envoyString(h.value_ptr, h.value_length),
		})
	}
	return out
}

// bodyFrames returns views of the body data Envoy has for this hook.
func (s stream) bodyFrames(kind C.envoy_dynamic_module_type_http_body_type) [][]byte {
	n := C.envoy_dynamic_module_callback_http_get_body_chunks_size(s.ptr, kind)
	if n == 0 {
		return nil
	}
	raw := make([]C.envoy_dynamic_module_type_envoy_buffer, n)
	if !C.envoy_dynamic_module_callback_http_get_body_chunks(s.ptr, kind, &raw[0]) {
		return nil
	}
	frames := make([][]byte, 0, n)
	for _, b := range raw {
		if v := envoyBytes(b); len(v) > 0 {
			frames = append(frames, v)
		}
	}
	return frames
}

func (s stream) attributeString(id int) (string, bool) {
	var buf C.envoy_dynamic_module_type_envoy_buffer
	if !C.envoy_dynamic_module_callback_http_filter_get_attribute_string(s.ptr, C.envoy_dynamic_module_type_attribute_id(id), &buf) {
		return "", false
	}
	return envoyString(buf.ptr, buf.length), true
}

func (s stream) attributeInt(id int) (int, bool) {
	var v C.uint64_t
	if !C.envoy_dynamic_module_callback_http_filter_get_attribute_int(s.ptr, C.envoy_dynamic_module_type_attribute_id(id), &v) {
		return 0, false
	}
	return int(v), true
}

// connection reads both ends of the connection. Envoy 1.40 puts the port in
// the address attribute; earlier versions only in the port attribute, which
// is then read too.
func (s stream) connection() waf.Connection {
	var c waf.Connection
	if addr, ok := s.attributeString(attrSourceAddress); ok {
		c.ClientIP, c.ClientPort = waf.SplitAddress(addr, s.portAttribute(attrSourcePort))
	}
	if addr, ok := s.attributeString(attrDestinationAddress); ok {
		c.ServerIP, c.ServerPort = waf.SplitAddress(addr, s.portAttribute(attrDestinationPort))
	}
	return c
}

// portAttribute reads a port attribute when called (0 when Envoy has none).
func (s stream) portAttribute(id int) func() int {
	return func() int {
		port, _ := s.attributeInt(id)
		return port
	}
}

// requestHead gathers what phase 1 needs.
func (s stream) requestHead(endOfStream bool) waf.RequestHead {
	req := waf.RequestHead{Conn: s.connection(), EndOfStream: endOfStream}
	req.Protocol, _ = s.attributeString(attrRequestProtocol)
	for _, h := range s.headers(C.HEADER_REQUEST) {
		switch h.Name {
		case ":method":
			req.Method = h.Value
		case ":path":
			req.Path = h.Value
		case ":authority":
			req.Authority, req.HasAuthority = h.Value, true
		case "x-request-id":
			if req.ClientRequestID == "" {
				req.ClientRequestID = h.Value
			}
			req.Headers = append(req.Headers, h)
		default:
			if !strings.HasPrefix(h.Name, ":") {
				req.Headers = append(req.Headers, h)
			}
		}
	}
	return req
}

// responseHead splits the response headers into status and fields.
func (s stream) responseHead() (int, []waf.Header) {
	status := 0
	all := s.headers(C.HEADER_RESPONSE)
	fields := all[:0]
	for _, h := range all {
		if h.Name == ":status" {
			status = atoi(h.Value)
			continue
		}
		if !strings.HasPrefix(h.Name, ":") {
			fields = append(fields, h)
		}
	}
	return status, fields
}

// raiseBufferLimit raises the stream's buffer limit to at least limit and
// returns the previous one (0 when nothing changed).
func (s stream) raiseBufferLimit(limit uint64) (previous uint64) {
	current := uint64(C.envoy_dynamic_module_callback_http_get_buffer_limit(s.ptr))
	if limit == 0 || (current != 0 && current >= limit) {
		return 0
	}
	C.envoy_dynamic_module_callback_http_set_buffer_limit(s.ptr, C.uint64_t(limit))
	return current
}

// continueDecoding resumes a request the filter held.
func (s stream) continueDecoding() {
	C.envoy_dynamic_module_callback_http_filter_continue_decoding(s.ptr)
}

func (s stream) setBufferLimit(limit uint64) {
	C.envoy_dynamic_module_callback_http_set_buffer_limit(s.ptr, C.uint64_t(limit))
}

// sendReply sends a local reply. The header vector lives in C memory and
// points at Go strings kept alive until Envoy has copied them.
func (s stream) sendReply(r *waf.LocalReply) {
	vec := cHeaders(r.Headers)
	defer C.free(unsafe.Pointer(vec))
	C.envoy_dynamic_module_callback_http_send_response(s.ptr, C.uint32_t(r.Status), vec, C.size_t(len(r.Headers)),
		moduleBuffer(r.Body), moduleBuffer(r.Details))
	runtime.KeepAlive(r)
}

// cHeaders copies headers into one block of C memory: the header vector,
// then the names and values it points at. A vector in C memory must not
// point into Go memory (cgo's pointer rules, which GOEXPERIMENT=cgocheck2
// enforces). It returns nil for no headers; the caller frees the block.
func cHeaders(headers []waf.Header) *C.envoy_dynamic_module_type_module_http_header {
	if len(headers) == 0 {
		return nil
	}
	entrySize := int(unsafe.Sizeof(C.envoy_dynamic_module_type_module_http_header{}))
	size := len(headers) * entrySize
	for _, h := range headers {
		size += len(h.Name) + len(h.Value)
	}
	block := unsafe.Slice((*byte)(C.malloc(C.size_t(size))), size)
	vec := (*C.envoy_dynamic_module_type_module_http_header)(unsafe.Pointer(&block[0]))
	entries, text := unsafe.Slice(vec, len(headers)), block[len(headers)*entrySize:]
	put := func(v string) (*C.char, C.size_t) {
		p := (*C.char)(unsafe.Pointer(unsafe.SliceData(text)))
		text = text[copy(text, v):]
		return p, C.size_t(len(v))
	}
	for i, h := range headers {
		entries[i].key_ptr, entries[i].key_length = put(h.Name)
		entries[i].value_ptr, entries[i].value_length = put(h.Value)
	}
	return vec
}

func (s stream) setMetadataString(ns, key, value string) {
	C.envoy_dynamic_module_callback_http_set_dynamic_metadata_string(s.ptr, moduleBuffer(ns), moduleBuffer(key), moduleBuffer(value))
}

func (s stream) setMetadataNumber(ns, key string, value float64) {
	C.envoy_dynamic_module_callback_http_set_dynamic_metadata_number(s.ptr, moduleBuffer(ns), moduleBuffer(key), C.double(value))
}

func (s stream) routeConfig() (C.envoy_dynamic_module_type_http_filter_per_route_config_module_ptr, bool) {
	p := C.envoy_dynamic_module_callback_get_most_specific_route_config(s.ptr)
	return p, p != 0
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// envoyLogger writes to Envoy's log through the ABI; it has no state.
type envoyLogger struct{}

func (envoyLogger) Log(level waf.Level, msg string) {
	C.envoy_dynamic_module_callback_log(envoyLevel(level), moduleBuffer(msg))
}

func (envoyLogger) Enabled(level waf.Level) bool {
	return bool(C.envoy_dynamic_module_callback_log_enabled(envoyLevel(level)))
}

func envoyLevel(l waf.Level) C.envoy_dynamic_module_type_log_level {
	switch l {
	case waf.LevelDebug:
		return C.LOG_DEBUG
	case waf.LevelInfo:
		return C.LOG_INFO
	case waf.LevelWarn:
		return C.LOG_WARN
	default:
		return C.LOG_ERROR
	}
}

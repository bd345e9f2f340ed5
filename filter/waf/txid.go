package waf

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// Transaction ids are the module's own, never the client's x-request-id:
// Envoy keeps a client's x-request-id unless it treats the client as
// external, and the dynamic-module ABI offers no stream id of Envoy's own
// (its request.id attribute is that same header). An id a client can
// choose could make two transactions share an audit record or a log trail.
//
// An id is a random prefix drawn once per process, then a sequence number:
// unique within the process without a random draw per stream, and unlikely
// to repeat across processes (restarts, a fleet) sharing one log store.
type txIDSource struct {
	prefix string
	seq    atomic.Uint64
}

var transactionIDs = newTxIDSource()

func newTxIDSource() *txIDSource {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return &txIDSource{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (s *txIDSource) next() string {
	return s.prefix + strconv.FormatUint(s.seq.Add(1), 16)
}

// maxLoggedRequestID bounds the client's x-request-id in log lines: it is
// the client's text, up to Envoy's header size limit.
const maxLoggedRequestID = 128

// loggedRequestID is the client's x-request-id as a log field: quoted (so
// it cannot forge log structure) and bounded.
func loggedRequestID(id string) string {
	if len(id) > maxLoggedRequestID {
		id = id[:maxLoggedRequestID] + "..."
	}
	return strconv.Quote(id)
}

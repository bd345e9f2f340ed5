package waf

import "sync/atomic"

// DefaultBodyBudgetBytes is Config.BodyBudgetBytes when not set: twenty
// bodies at the CRS's default SecRequestBodyLimit (12.5 MiB), or thousands
// of the JSON bodies APIs send.
const DefaultBodyBudgetBytes = 256 << 20

// bodyBudget caps the body bytes a filter config holds for inspection
// across all its streams, on every worker. Per stream, Envoy's buffer limit
// (raised to the inspection limit) bounds what one body can hold; nothing
// but this bounds how many bodies are held at once, and HTTP/2 lets one
// connection open hundreds of streams that each send a body up to the limit
// and never end it. A stream that would go over the budget is answered 503
// (Stream.OnRequestBody) instead.
type bodyBudget struct {
	limit int64
	held  atomic.Int64
}

func newBodyBudget(limit int64) *bodyBudget { return &bodyBudget{limit: limit} }

// reserve takes n bytes from the budget, or reports that they would exceed
// it (and takes nothing). A nil budget is unlimited: streams built without a
// Filter, in tests.
func (b *bodyBudget) reserve(n int64) bool {
	if b == nil {
		return true
	}
	if b.held.Add(n) > b.limit {
		b.held.Add(-n)
		return false
	}
	return true
}

// release gives n reserved bytes back.
func (b *bodyBudget) release(n int64) {
	if b != nil && n != 0 {
		b.held.Add(-n)
	}
}

// Held is the number of bytes reserved now.
func (b *bodyBudget) Held() int64 {
	if b == nil {
		return 0
	}
	return b.held.Load()
}

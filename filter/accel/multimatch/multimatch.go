// Package multimatch defines the accelerator's multi-pattern prefilter: one
// scan of a value tells, for many Go regular expressions at once, which of
// them may match it. Implementations must never leave out an expression
// that matches (no false negatives); reporting one that does not match
// only costs an exact check.
package multimatch

// Prefilter scans values against a fixed list of expressions, identified
// by their index in that list. It is safe for concurrent use.
type Prefilter interface {
	// MayMatch appends to hits the index of every expression that may
	// match value, each at most once, in increasing order, and returns
	// the extended slice. scratch is a buffer the caller owns and
	// reuses; the returned scratch replaces it.
	MayMatch(value string, hits []int32, scratch []byte) (outHits []int32, outScratch []byte)
	// Filtered reports whether the prefilter can rule expression i out
	// at all; an expression it cannot (no fixed text to look for) is
	// reported as a possible match for every value.
	Filtered(i int) bool
	// Name says which engine this is, for logs and benchmarks.
	Name() string
}

// Bitset is a set of small non-negative integers.
type Bitset []uint64

// NewBitset returns a set able to hold 0..n-1.
func NewBitset(n int) Bitset { return make(Bitset, (n+63)/64) }

// Set adds i.
func (b Bitset) Set(i int) { b[i>>6] |= 1 << (uint(i) & 63) }

// Has reports whether i is in the set.
func (b Bitset) Has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }

// Clear empties the set.
func (b Bitset) Clear() { clear(b) }

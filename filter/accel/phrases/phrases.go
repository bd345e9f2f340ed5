// Package phrases finds many phrases in a value at once, ignoring ASCII
// case: the matching behind Coraza's @pm family, in a compact automaton.
//
// Coraza builds @pmFromFile's automaton with a general Aho-Corasick library
// whose states are Go objects with their own transition slices: CRS's
// phrase files (137 KB of phrases) take about 11 MB of live heap that way,
// which the Go collector doubles between collections. A Matcher keeps the
// same automaton in a few flat arrays, about 17 bytes per trie node (2 MB
// for CRS), with the same answers: whether a value holds a phrase, and
// which phrases Coraza's leftmost-longest iteration finds (what it
// captures).
package phrases

import (
	"errors"
	"math"
	"slices"
)

// Matcher is an immutable Aho-Corasick automaton over ASCII-folded bytes,
// safe for concurrent use. Node 0 is the root; the others are numbered in
// breadth-first order, so a node's children are contiguous.
type Matcher struct {
	// root is the root's transition for every byte (0: stay at the root),
	// dense because most steps of a scan leave from the root.
	root [256]uint32
	// edgeStart[n]..edgeStart[n+1] index node n's edges in labels and
	// targets, sorted by label.
	edgeStart []uint32
	labels    []byte
	targets   []uint32
	fail      []uint32
	// longest[n] is the length of the longest phrase that ends node n's
	// string (its own or one along the failure chain), 0 when none does.
	longest []uint32
	minLen  int
	maxLen  int
}

// ErrEmptyPhrase is returned for a list with an empty phrase, which
// matches at every position of every value.
var ErrEmptyPhrase = errors.New("an empty phrase matches everywhere")

// New builds a matcher for the phrases, compared with ASCII letters folded
// on both sides (as Coraza's @pm does: other bytes compare exactly). With
// no phrases, nothing matches.
func New(phrases []string) (*Matcher, error) {
	t := newTrie()
	for _, p := range phrases {
		if p == "" {
			return nil, ErrEmptyPhrase
		}
		t.insert(p)
	}
	m := t.flatten()
	m.minLen = math.MaxInt
	for _, p := range phrases {
		m.minLen = min(m.minLen, len(p))
		m.maxLen = max(m.maxLen, len(p))
	}
	m.link()
	return m, nil
}

// Contains reports whether value holds any phrase.
func (m *Matcher) Contains(value string) bool {
	if len(value) < m.minLen {
		return false
	}
	state := uint32(0)
	for i := 0; i < len(value); i++ {
		state = m.step(state, value[i])
		if m.longest[state] != 0 {
			return true
		}
	}
	return false
}

// Matches calls found with the bounds of at most limit matches, found
// the way Coraza's @pm captures them: the leftmost-longest match (of the
// phrases that start leftmost, the longest), then the leftmost-longest
// starting after its start, and so on; matches may overlap.
func (m *Matcher) Matches(value string, limit int, found func(start, end int)) {
	from := 0
	for n := 0; n < limit; n++ {
		start, end, ok := m.leftmostLongest(value, from)
		if !ok {
			return
		}
		found(start, end)
		from = start + 1
	}
}

// leftmostLongest finds the first match at or after from. A match ending
// at i is the longest phrase ending there (any shorter one starts later);
// once i is a full phrase length past the best start, no match still to
// come can start at or before it.
func (m *Matcher) leftmostLongest(value string, from int) (start, end int, ok bool) {
	state := uint32(0)
	start = -1
	for i := from; i < len(value); i++ {
		if start >= 0 && i >= start+m.maxLen {
			break
		}
		state = m.step(state, value[i])
		n := int(m.longest[state])
		if n == 0 {
			continue
		}
		if s := i + 1 - n; start < 0 || s <= start {
			start, end = s, i+1
		}
	}
	return start, end, start >= 0
}

// step is the automaton's transition from state on byte b.
func (m *Matcher) step(state uint32, b byte) uint32 {
	b = lower[b]
	for state != 0 {
		if next, ok := m.child(state, b); ok {
			return next
		}
		state = m.fail[state]
	}
	return m.root[b]
}

// child follows node's edge labelled b, if it has one. Most nodes deep in
// a trie of words have one child, so short lists are scanned.
func (m *Matcher) child(node uint32, b byte) (uint32, bool) {
	lo, hi := m.edgeStart[node], m.edgeStart[node+1]
	if hi-lo <= 8 {
		for e := lo; e < hi; e++ {
			if m.labels[e] == b {
				return m.targets[e], true
			}
		}
		return 0, false
	}
	if e, ok := slices.BinarySearch(m.labels[lo:hi], b); ok {
		return m.targets[lo+uint32(e)], true
	}
	return 0, false
}

// link computes failure links and longest, breadth first: a node's
// failure target is shallower, so it is complete when the node is reached.
func (m *Matcher) link() {
	for n := uint32(0); n < uint32(len(m.fail)); n++ {
		for e := m.edgeStart[n]; e < m.edgeStart[n+1]; e++ {
			child := m.targets[e]
			if n != 0 {
				m.fail[child] = m.step(m.fail[n], m.labels[e])
			}
			if m.longest[child] == 0 {
				m.longest[child] = m.longest[m.fail[child]]
			}
		}
	}
}

// lower folds ASCII letters to lower case and leaves every other byte.
var lower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i - 'A' + 'a')
		}
	}
	return t
}()

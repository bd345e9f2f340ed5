package literals

import (
	"math"
	"slices"
)

// Automaton finds, in one pass over a folded value, every pattern one of
// whose strings occurs in it (overlapping occurrences included: a value
// "select" holds both "SELECT" and "ELECT"). It is an Aho-Corasick
// automaton with a dense transition table over the byte classes the
// strings use; it is immutable and safe for concurrent use.
type Automaton struct {
	class   [256]uint8 // byte -> class; 0 for bytes no string uses
	classes int
	// The transition table, state*classes + class -> state, in 16-bit
	// entries when the states fit (CRS's 7,204 states x 76 classes: 1.1 MB
	// instead of 2.2 MB of live heap, which the collector doubles), else
	// in 32-bit ones. Exactly one is set.
	next16 []uint16
	next32 []int32
	outs   [][]int32
	// terminal marks states with outputs, so the scan loop tests one byte.
	terminal []bool
}

// NewAutomaton builds an automaton for strings[i], the folded strings of
// pattern i. Patterns with no strings are never reported.
func NewAutomaton(strings [][]string) *Automaton {
	a := &Automaton{}
	used := [256]bool{}
	for _, set := range strings {
		for _, s := range set {
			for i := 0; i < len(s); i++ {
				used[s[i]] = true
			}
		}
	}
	a.classes = 1
	for b := range used {
		if used[b] {
			a.class[b] = uint8(a.classes)
			a.classes++
		}
	}
	// The trie, with -1 for missing edges.
	trie := [][]int32{newRow(a.classes)}
	outs := [][]int32{nil}
	for p, set := range strings {
		for _, s := range set {
			state := int32(0)
			for i := 0; i < len(s); i++ {
				c := a.class[s[i]]
				if trie[state][c] < 0 {
					trie = append(trie, newRow(a.classes))
					outs = append(outs, nil)
					trie[state][c] = int32(len(trie) - 1)
				}
				state = trie[state][c]
			}
			outs[state] = append(outs[state], int32(p))
		}
	}
	// Breadth-first: failure links, then complete transitions and
	// outputs inherited along the failure chain.
	fail := make([]int32, len(trie))
	queue := make([]int32, 0, len(trie))
	for c := 0; c < a.classes; c++ {
		if s := trie[0][c]; s > 0 {
			fail[s] = 0
			queue = append(queue, s)
		} else {
			trie[0][c] = 0
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		outs[s] = append(outs[s], outs[fail[s]]...)
		for c := 0; c < a.classes; c++ {
			t := trie[s][c]
			if t < 0 {
				trie[s][c] = trie[fail[s]][c]
				continue
			}
			fail[t] = trie[fail[s]][c]
			queue = append(queue, t)
		}
	}
	a.setTable(trie)
	a.terminal = make([]bool, len(trie))
	a.outs = make([][]int32, len(trie))
	for s := range trie {
		if len(outs[s]) > 0 {
			o := slices.Clone(outs[s])
			slices.Sort(o)
			a.outs[s] = slices.Compact(o)
			a.terminal[s] = true
		}
	}
	return a
}

// setTable lays the complete trie out as the transition table.
func (a *Automaton) setTable(trie [][]int32) {
	if len(trie) > math.MaxUint16+1 {
		a.next32 = table[int32](trie, a.classes)
	} else {
		a.next16 = table[uint16](trie, a.classes)
	}
}

func table[State uint16 | int32](trie [][]int32, classes int) []State {
	t := make([]State, 0, len(trie)*classes)
	for _, row := range trie {
		for _, next := range row {
			t = append(t, State(next))
		}
	}
	return t
}

func newRow(n int) []int32 {
	row := make([]int32, n)
	for i := range row {
		row[i] = -1
	}
	return row
}

// States is the automaton's size, for reports.
func (a *Automaton) States() int { return len(a.terminal) }

// Scan calls hit for each pattern with a string in folded, possibly more
// than once per pattern.
func (a *Automaton) Scan(folded []byte, hit func(pattern int32)) {
	if a.next16 != nil {
		scan(a, a.next16, folded, hit)
	} else {
		scan(a, a.next32, folded, hit)
	}
}

// scan is Scan over a table of either width (compiled once per width).
func scan[State uint16 | int32](a *Automaton, next []State, folded []byte, hit func(pattern int32)) {
	state := 0
	for _, b := range folded {
		state = int(next[state*a.classes+int(a.class[b])])
		if a.terminal[state] {
			for _, p := range a.outs[state] {
				hit(p)
			}
		}
	}
}

package phrases

import "slices"

// trie is the build-time form: one object per node, garbage once the
// matcher is flattened.
type trie struct {
	nodes []trieNode
}

type trieNode struct {
	edges []trieEdge
	// phraseLen is the node's depth when a phrase ends here, else 0.
	phraseLen uint32
}

type trieEdge struct {
	label byte
	to    uint32
}

func newTrie() *trie { return &trie{nodes: []trieNode{{}}} }

func (t *trie) insert(phrase string) {
	node := uint32(0)
	for i := 0; i < len(phrase); i++ {
		b := lower[phrase[i]]
		k := slices.IndexFunc(t.nodes[node].edges, func(e trieEdge) bool { return e.label == b })
		if k < 0 {
			t.nodes = append(t.nodes, trieNode{})
			next := uint32(len(t.nodes) - 1)
			t.nodes[node].edges = append(t.nodes[node].edges, trieEdge{label: b, to: next})
			node = next
			continue
		}
		node = t.nodes[node].edges[k].to
	}
	t.nodes[node].phraseLen = uint32(len(phrase))
}

// flatten numbers the nodes breadth first and lays them out in a
// Matcher's arrays, with each node's edges sorted by label.
func (t *trie) flatten() *Matcher {
	n := len(t.nodes)
	m := &Matcher{
		edgeStart: make([]uint32, 0, n+1),
		labels:    make([]byte, 0, n-1),
		targets:   make([]uint32, 0, n-1),
		fail:      make([]uint32, n),
		longest:   make([]uint32, n),
	}
	order := make([]uint32, 1, n) // new number -> trie node
	for next := 0; next < len(order); next++ {
		node := &t.nodes[order[next]]
		slices.SortFunc(node.edges, func(a, b trieEdge) int { return int(a.label) - int(b.label) })
		m.edgeStart = append(m.edgeStart, uint32(len(m.labels)))
		m.longest[next] = node.phraseLen
		for _, e := range node.edges {
			m.labels = append(m.labels, e.label)
			m.targets = append(m.targets, uint32(len(order))) // the child's new number
			order = append(order, e.to)
		}
	}
	m.edgeStart = append(m.edgeStart, uint32(len(m.labels)))
	for e := m.edgeStart[0]; e < m.edgeStart[1]; e++ {
		m.root[m.labels[e]] = m.targets[e]
	}
	return m
}

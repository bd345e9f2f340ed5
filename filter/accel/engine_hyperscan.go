//go:build corazawaf_hyperscan

package accel

import (
	"fmt"
	"slices"
	"sync"

	"github.com/wafsweep/wafsweep/filter/accel/hyperscan"
	"github.com/wafsweep/wafsweep/filter/accel/multimatch"
	"github.com/wafsweep/wafsweep/filter/accel/translate"
)

// DefaultEngine, in builds with the corazawaf_hyperscan tag: the pure-Go
// engine, with Hyperscan taking over the expressions the literal
// prefilter cannot narrow down (they would otherwise run through RE2 for
// every value), when it compiles them exactly. One Hyperscan scan per value
// then replaces a dozen RE2 calls; the literal prefilter, cheaper than a
// cgo call on short values, keeps the rest. Expressions Hyperscan takes
// only in its prefilter mode (the ten huge RCE expressions, which would
// then match nearly everything) stay on RE2. On a CPU Hyperscan does not
// support, or if the library fails, the pure-Go engine does it all and the
// summary line in Envoy's log says why.
func DefaultEngine(exprs []string) (Engine, error) {
	e, err := PureGoEngine(exprs)
	if err != nil {
		return Engine{}, err
	}
	skip := make([]bool, len(exprs))
	for i := range exprs {
		skip[i] = e.Direct[i] == nil
	}
	db, err := hyperscan.Compile(exprs, hyperscan.Options{NoPrefilterMode: true, Skip: skip})
	if err != nil {
		e.Prefilter = named{e.Prefilter, fmt.Sprintf("literal + RE2, pure Go, falling back from Hyperscan: %v", err)}
		return e, nil
	}
	taken := 0
	for i := range exprs {
		if db.Covered(i) {
			e.Direct[i] = nil
			taken++
		}
	}
	source := "compiled"
	switch {
	case db.FromDisk:
		source = "loaded from cache"
	case db.CacheRejected != nil:
		source = fmt.Sprintf("compiled; cache file not used: %v", db.CacheRejected)
	}
	e.Prefilter = &hyperscanPrefilter{db: db, rest: e.Prefilter, n: len(exprs),
		name: fmt.Sprintf("literal + hyperscan %s for %d expressions (database %s) + RE2", hyperscan.Version(), taken, source)}
	return e, nil
}

type hyperscanPrefilter struct {
	db   *hyperscan.Database
	rest multimatch.Prefilter
	name string
	n    int
	bufs sync.Pool
}

func (p *hyperscanPrefilter) MayMatch(value string, hits []int32, scratch []byte) ([]int32, []byte) {
	start := len(hits)
	hits, scratch = p.rest.MayMatch(value, hits, scratch)
	buf, _ := p.bufs.Get().(*hyperscan.IDs)
	if buf == nil {
		buf = p.db.NewIDs()
	}
	var err error
	hits, err = p.db.Scan(translate.Sanitize(value), hits, buf)
	p.bufs.Put(buf)
	if err != nil {
		// A failed scan rules nothing out: every covered expression may match.
		for i := 0; i < p.n; i++ {
			if p.db.Covered(i) {
				hits = append(hits, int32(i))
			}
		}
	}
	found := hits[start:]
	slices.Sort(found)
	found = slices.Compact(found)
	return hits[:start+len(found)], scratch
}

func (p *hyperscanPrefilter) Filtered(i int) bool { return p.db.Covered(i) || p.rest.Filtered(i) }
func (p *hyperscanPrefilter) Name() string        { return p.name }

type named struct {
	multimatch.Prefilter
	name string
}

func (n named) Name() string { return n.name }

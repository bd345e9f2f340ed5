package plugin

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	ahocorasick "github.com/petar-dambovaliev/aho-corasick"

	"github.com/wafsweep/wafsweep/filter/accel/phrases"
)

// Coraza's names of the phrase-file operator. The operator registered
// under them replaces Coraza's for the whole process (Coraza looks
// operators up by name), so it builds what Coraza builds for every WAF but
// the accelerated ones: those get the compact matcher of package phrases,
// with the same answers in a seventh of the memory.
var pmFromFileNames = []string{"pmFromFile", "pmf"}

func registerPhraseOperators() {
	for _, name := range pmFromFileNames {
		plugins.RegisterOperator(name, newPMFromFile)
	}
}

// CompactPhrases marks a WAF's root filesystem: @pmFromFile in rule sets
// built on the returned root use the compact matcher. Coraza hands each
// operator the WAF's root, the one per-WAF value an operator sees.
func CompactPhrases(root fs.FS) fs.FS { return compactRoot{root} }

type compactRoot struct{ fs.FS }

// ReadFile and Glob keep the wrapped root's own implementations in use.
func (r compactRoot) ReadFile(name string) ([]byte, error) { return fs.ReadFile(r.FS, name) }
func (r compactRoot) Glob(pattern string) ([]string, error) {
	return fs.Glob(r.FS, pattern)
}

func newPMFromFile(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	data, err := ReadDataFile(o.Arguments, o.Path, o.Root)
	if err != nil {
		return nil, err
	}
	list := phrases.ParseFile(data)
	// Coraza's memoization key: a WAF built from the same files shares
	// the automaton.
	key := strings.Join(o.Path, ",") + o.Arguments
	if _, compact := o.Root.(compactRoot); compact {
		m, err := memoize(o.Memoizer, "corazawaf/phrases:"+key, func() (any, error) { return phrases.New(list) })
		if err != nil {
			return nil, err
		}
		return compactPM{m.(*phrases.Matcher)}, nil
	}
	ac, _ := memoize(o.Memoizer, key, func() (any, error) {
		builder := ahocorasick.NewAhoCorasickBuilder(ahocorasick.Opts{
			AsciiCaseInsensitive: true,
			MatchKind:            ahocorasick.LeftMostLongestMatch,
		})
		return builder.Build(list), nil
	})
	return libraryPM{matcher: ac.(ahocorasick.AhoCorasick), minLen: shortest(list)}, nil
}

// ReadDataFile finds a data file as Coraza does: an absolute name in the
// root, else the first of the rule file's directories that has it.
func ReadDataFile(name string, dirs []string, root fs.FS) ([]byte, error) {
	if path.IsAbs(name) {
		return fs.ReadFile(root, name)
	}
	if len(dirs) == 0 {
		return nil, errors.New("empty dirs")
	}
	var err error
	for _, dir := range dirs {
		var data []byte
		if data, err = fs.ReadFile(root, path.Join(dir, name)); err == nil {
			return data, nil
		}
		if !os.IsNotExist(err) {
			return nil, err
		}
	}
	return nil, err
}

func memoize(m plugintypes.Memoizer, key string, build func() (any, error)) (any, error) {
	if m == nil {
		return build()
	}
	return m.Do(key, build)
}

// maxCaptures is how many matches Coraza's @pm captures (TX.0 to TX.9).
const maxCaptures = 10

type compactPM struct{ m *phrases.Matcher }

func (o compactPM) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if !tx.Capturing() {
		return o.m.Contains(value)
	}
	n := 0
	o.m.Matches(value, maxCaptures, func(start, end int) {
		tx.CaptureField(n, value[start:end])
		n++
	})
	return n > 0
}

// libraryPM is Coraza's own operator, for WAFs that are not accelerated.
type libraryPM struct {
	matcher ahocorasick.AhoCorasick
	minLen  int
}

func (o libraryPM) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if len(value) < o.minLen {
		return false
	}
	it := o.matcher.Iter(value)
	if !tx.Capturing() {
		return it.Next() != nil
	}
	n := 0
	for m := it.Next(); m != nil && n < maxCaptures; m = it.Next() {
		tx.CaptureField(n, value[m.Start():m.End()])
		n++
	}
	return n > 0
}

// shortest is the length of the shortest phrase (0 for none).
func shortest(list []string) int {
	n := 0
	for i, p := range list {
		if i == 0 || len(p) < n {
			n = len(p)
		}
	}
	return n
}

package plugin

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

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
// operator the WAF's root, the one per-WAF value an operator sees. The
// root also keeps the matchers PhraseFile builds, so the accelerator's
// decisions and the WAF's operators share one per data file.
func CompactPhrases(root fs.FS) fs.FS {
	return &compactRoot{FS: root, built: map[string]*phrases.Matcher{}}
}

type compactRoot struct {
	fs.FS
	mu    sync.Mutex
	built map[string]*phrases.Matcher // by file name in the root
}

// ReadFile and Glob keep the wrapped root's own implementations in use.
func (r *compactRoot) ReadFile(name string) ([]byte, error) { return fs.ReadFile(r.FS, name) }
func (r *compactRoot) Glob(pattern string) ([]string, error) {
	return fs.Glob(r.FS, pattern)
}

// PhraseFile returns the compact matcher of a @pmFromFile data file,
// found as Coraza finds it (findDataFile). On a root marked by
// CompactPhrases each file is built once.
func PhraseFile(name string, dirs []string, root fs.FS) (*phrases.Matcher, error) {
	file, err := findDataFile(name, dirs, root)
	if err != nil {
		return nil, err
	}
	r, marked := root.(*compactRoot)
	if marked {
		r.mu.Lock()
		defer r.mu.Unlock()
		if m, ok := r.built[file]; ok {
			return m, nil
		}
	}
	data, err := fs.ReadFile(root, file)
	if err != nil {
		return nil, err
	}
	m, err := phrases.New(phrases.ParseFile(data))
	if err != nil {
		return nil, err
	}
	if marked {
		r.built[file] = m
	}
	return m, nil
}

func newPMFromFile(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	// Coraza's memoization key: a WAF built from the same files shares
	// the automaton.
	key := strings.Join(o.Path, ",") + o.Arguments
	if _, compact := o.Root.(*compactRoot); compact {
		m, err := memoize(o.Memoizer, "corazawaf/phrases:"+key, func() (any, error) { return PhraseFile(o.Arguments, o.Path, o.Root) })
		if err != nil {
			return nil, err
		}
		return compactPM{m.(*phrases.Matcher)}, nil
	}
	data, err := readDataFile(o.Arguments, o.Path, o.Root)
	if err != nil {
		return nil, err
	}
	list := phrases.ParseFile(data)
	ac, _ := memoize(o.Memoizer, key, func() (any, error) {
		builder := ahocorasick.NewAhoCorasickBuilder(ahocorasick.Opts{
			AsciiCaseInsensitive: true,
			MatchKind:            ahocorasick.LeftMostLongestMatch,
		})
		return builder.Build(list), nil
	})
	return libraryPM{matcher: ac.(ahocorasick.AhoCorasick), minLen: shortest(list)}, nil
}

// readDataFile reads a data file as Coraza finds it (findDataFile).
func readDataFile(name string, dirs []string, root fs.FS) ([]byte, error) {
	file, err := findDataFile(name, dirs, root)
	if err != nil {
		return nil, err
	}
	return fs.ReadFile(root, file)
}

// findDataFile names a data file as Coraza finds it: an absolute name in
// the root, else in the first of the rule file's directories that has it.
func findDataFile(name string, dirs []string, root fs.FS) (string, error) {
	if path.IsAbs(name) {
		return name, nil
	}
	if len(dirs) == 0 {
		return "", errors.New("empty dirs")
	}
	var err error
	for _, dir := range dirs {
		file := path.Join(dir, name)
		if _, err = fs.Stat(root, file); err == nil {
			return file, nil
		}
		if !os.IsNotExist(err) {
			return "", err
		}
	}
	return "", err
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

//go:build corazawaf_hyperscan

package hyperscan

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/wafsweep/wafsweep/filter/accel/translate"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

func TestHyperscanAnswersAsGoRegexp(t *testing.T) {
	exprs := []string{`(?sm)(?i)kill`, `(?sm)^rm -rf$`, `(?sm)\bcat\b`, `(?sm)a.b`, `(?sm)[^a-z]x`, `(?sm)^id$`}
	inputs := []string{"\u212Aill", "KILL", "x\nrm -rf\ny", "xrm -rf", "bobcat", "cat_", "a cat.", "a\xffb", "\xffx", "ax", "id", "x\nid"}
	db, err := Compile(exprs, Options{NoPrefilterMode: true, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	agree(t, db, exprs, inputs)
}

// TestDatabaseLoadsFromTheCache compiles into a cache directory, then
// loads from it (the serialized form starts at an odd offset of the file
// read into Go memory): same answers.
func TestDatabaseLoadsFromTheCache(t *testing.T) {
	exprs := []string{`(?sm)(?i)kill`, `(?sm)^rm -rf$`, `(?sm)\bcat\b`}
	inputs := []string{"KILL", "x\nrm -rf\ny", "bobcat", "a cat.", "nothing"}
	dir := t.TempDir()
	compiled, err := Compile(exprs, Options{NoPrefilterMode: true, CacheDir: dir})
	if err != nil || compiled.FromDisk {
		t.Fatalf("first compile: from disk %v, %v", compiled != nil && compiled.FromDisk, err)
	}
	loaded, err := Compile(exprs, Options{NoPrefilterMode: true, CacheDir: dir})
	if err != nil || !loaded.FromDisk {
		t.Fatalf("second compile: not loaded from the cache (%v)", err)
	}
	agree(t, loaded, exprs, inputs)
}

// A cache file that was corrupted or tampered with, or that another user
// could have written, is not used: the database is compiled again, and
// answers as Go's regexp does. (A flipped "exact" byte would otherwise make
// the accelerator skip a rule whose expression Hyperscan never scans for.)
func TestCacheFileIsVerified(t *testing.T) {
	exprs := []string{`(?sm)(?i)kill`, `(?sm)^rm -rf$`, `(?sm)\bcat\b`}
	inputs := []string{"KILL", "x\nrm -rf\ny", "bobcat", "a cat.", "nothing"}
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"a flipped expression byte", func(t *testing.T, path string) { flipByte(t, path, 0) }},
		{"a flipped database byte", func(t *testing.T, path string) { flipByte(t, path, 40) }},
		{"a truncated file", func(t *testing.T, path string) {
			if err := os.Truncate(path, 10); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file others may write", func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory others may write", func(t *testing.T, path string) {
			if err := os.Chmod(filepath.Dir(path), 0o777); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Compile(exprs, Options{NoPrefilterMode: true, CacheDir: dir}); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.hsdb"))
			if len(files) != 1 {
				t.Fatalf("cache files %v, want one", files)
			}
			tt.damage(t, files[0])
			db, err := Compile(exprs, Options{NoPrefilterMode: true, CacheDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if db.FromDisk || db.CacheRejected == nil {
				t.Fatalf("the damaged cache file was used (from disk %v, rejection %v)", db.FromDisk, db.CacheRejected)
			}
			t.Log(db.CacheRejected)
			agree(t, db, exprs, inputs)
		})
	}
}

func flipByte(t *testing.T, path string, at int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) <= at {
		t.Fatalf("reading %s: %d bytes, %v", path, len(b), err)
	}
	b[at] ^= 0x01
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHyperscanOnCRS compiles every CRS candidate expression Hyperscan
// takes exactly and compares it with Go's regexp on the CRS suite's strings.
func TestHyperscanOnCRS(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the CRS expressions one by one (tens of seconds)")
	}
	cands, err := crscorpus.Expressions()
	if err != nil {
		t.Fatal(err)
	}
	exprs := make([]string, len(cands))
	for i, c := range cands {
		exprs[i] = c.Expr
	}
	corpus, err := crscorpus.Strings(1500, 300)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Compile(exprs, Options{NoPrefilterMode: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	covered := 0
	for i := range exprs {
		if db.Covered(i) {
			covered++
		}
	}
	t.Logf("Hyperscan %s takes %d of %d expressions exactly", Version(), covered, len(exprs))
	agree(t, db, exprs, corpus)
}

func agree(t *testing.T, db *Database, exprs, inputs []string) {
	t.Helper()
	res := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		res[i] = regexp.MustCompile(e)
	}
	buf := db.NewIDs()
	for _, in := range inputs {
		hits, err := db.Scan(translate.Sanitize(in), nil, buf)
		if err != nil {
			t.Fatal(err)
		}
		for i, re := range res {
			if !db.Covered(i) {
				continue
			}
			if want, got := re.MatchString(in), slices.Contains(hits, int32(i)); got != want {
				t.Errorf("%.50q on %.40q: Hyperscan %v, Go %v", exprs[i], in, got, want)
			}
		}
	}
}

// TestScratchSpacesAreReusedAcrossCollections scans between collections:
// one scan at a time needs one scratch space, however many collections
// run (a sync.Pool dropped them at collections and leaked their C memory).
func TestScratchSpacesAreReusedAcrossCollections(t *testing.T) {
	db, err := Compile([]string{`(?sm)(?i)kill\d+`, `(?sm)\bcat\b`}, Options{NoPrefilterMode: true, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	buf := db.NewIDs()
	for range 50 {
		if _, err := db.Scan("a cat", nil, buf); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
	}
	if n := db.scratch.cloned.Load(); n != 1 {
		t.Errorf("%d scratch spaces made for scans one at a time, want 1", n)
	}
}

// TestConcurrentScansKeepTheirScratchSpaces runs scans on several
// goroutines: each needs its own scratch space, and they are all kept.
func TestConcurrentScansKeepTheirScratchSpaces(t *testing.T) {
	db, err := Compile([]string{`(?sm)\bcat\b`}, Options{NoPrefilterMode: true, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			buf := db.NewIDs()
			for range 200 {
				hits, err := db.Scan("the cat sat", nil, buf)
				if err != nil || len(hits) != 1 {
					t.Errorf("hits %v, err %v", hits, err)
					return
				}
			}
		})
	}
	wg.Wait()
	made, kept := db.scratch.cloned.Load(), len(db.scratch.free)
	if made < 1 || made > 8 || int64(kept) != made {
		t.Errorf("made %d scratch spaces for 8 goroutines and kept %d, want 1-8, all kept", made, kept)
	}
}

// Hyperscan misses the empty line after a value's last newline, which
// Go's regexp finds ("(?sm)^$" on "x\n"): expressions that can match the
// empty string are left to the caller.
func TestExpressionsThatMatchEmptyAreLeftOut(t *testing.T) {
	db, err := Compile([]string{`(?sm)^$`, `(?sm)^\s*$`, `(?sm)a+`}, Options{NoPrefilterMode: true, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, false, true} {
		if db.Covered(i) != want {
			t.Errorf("expression %d covered %v, want %v", i, db.Covered(i), want)
		}
	}
}

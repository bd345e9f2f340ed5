//go:build corazawaf_hyperscan

// Package hyperscan is the accelerator's native prefilter: Hyperscan 5.4.0
// (Debian's libhyperscan-dev; never Debian's Vectorscan 5.4.9, which
// misses matches on AVX-512 machines) scanning a value once for all
// expressions. Expressions are rewritten from Go's parse tree (package
// translate) and compiled with UTF-8, multi-line and single-match flags;
// one Hyperscan cannot take exactly is compiled in its prefilter mode (a
// superset), and the accelerator confirms every hit anyway. Values are
// scanned with invalid UTF-8 bytes replaced by U+FFFD, as Go's regexp
// reads them (Hyperscan's UTF-8 mode requires valid input).
//
// Compiling CRS takes tens of seconds, so databases are serialized into a
// cache directory keyed by their content ($CORAZAWAF_HS_CACHE, else the
// user cache directory); `make build` fills it ahead of time.
package hyperscan

/*
#cgo LDFLAGS: -lhs
#include <stdlib.h>
#include <string.h>
#include <hs/hs.h>

// hits collects match ids in C memory: one C callback per match, no Go.
typedef struct { unsigned int *ids; unsigned int n, cap; } wafsweep_hits;

static int wafsweep_on_match(unsigned int id, unsigned long long from, unsigned long long to,
                             unsigned int flags, void *ctx) {
	wafsweep_hits *h = (wafsweep_hits *)ctx;
	if (h->n < h->cap) h->ids[h->n++] = id;
	return 0;
}

static hs_error_t wafsweep_scan(const hs_database_t *db, const char *data, unsigned int len,
                                hs_scratch_t *scratch, unsigned int *ids, unsigned int cap, unsigned int *n) {
	wafsweep_hits h = {ids, 0, cap};
	hs_error_t err = hs_scan(db, data, len, 0, scratch, wafsweep_on_match, &h);
	*n = h.n;
	return err;
}

static hs_error_t wafsweep_compile_one(const char *expr, unsigned int flags, hs_database_t **db, char **msg) {
	hs_compile_error_t *cerr = NULL;
	hs_error_t err = hs_compile(expr, flags, HS_MODE_BLOCK, NULL, db, &cerr);
	if (err != HS_SUCCESS && cerr != NULL) {
		*msg = strdup(cerr->message);
		hs_free_compile_error(cerr);
	}
	return err;
}

static hs_error_t wafsweep_compile_multi(const char *const *exprs, const unsigned int *flags,
                                         const unsigned int *ids, unsigned int n, hs_database_t **db, char **msg) {
	hs_compile_error_t *cerr = NULL;
	hs_error_t err = hs_compile_multi(exprs, flags, ids, n, HS_MODE_BLOCK, NULL, db, &cerr);
	if (err != HS_SUCCESS && cerr != NULL) {
		*msg = strdup(cerr->message);
		hs_free_compile_error(cerr);
	}
	return err;
}
*/
import "C"

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/wafsweep/wafsweep/filter/accel/literals"
	"github.com/wafsweep/wafsweep/filter/accel/translate"
)

const (
	flagsExact     = C.HS_FLAG_UTF8 | C.HS_FLAG_MULTILINE | C.HS_FLAG_SINGLEMATCH | C.HS_FLAG_ALLOWEMPTY
	flagsPrefilter = flagsExact | C.HS_FLAG_PREFILTER
)

// disableEnv set to "off" makes Supported fail, to run (and test) the
// pure-Go fall-back on a machine that has Hyperscan.
const disableEnv = "CORAZAWAF_HYPERSCAN"

// Supported reports whether this CPU can run Hyperscan (x86-64 with SSSE3).
func Supported() error {
	if os.Getenv(disableEnv) == "off" {
		return errors.New("disabled by " + disableEnv + "=off")
	}
	if C.hs_valid_platform() != C.HS_SUCCESS {
		return errors.New("this CPU lacks what Hyperscan needs (SSSE3)")
	}
	return nil
}

// Version is the linked Hyperscan's version string.
func Version() string { return C.GoString(C.hs_version()) }

// Database scans values for a fixed list of expressions.
type Database struct {
	db       *C.hs_database_t
	scratch  scratchList
	proto    *C.hs_scratch_t
	covered  []bool // expression compiled (exactly or as prefilter)
	inexact  []bool // compiled in prefilter mode
	n        int
	FromDisk bool // loaded from the cache
	// CacheRejected is why a cache file for these expressions was not
	// used (corrupt, tampered, or writable by another user); the database
	// was compiled instead.
	CacheRejected error
}

// Options say how expressions are compiled.
type Options struct {
	// Skip[i] leaves expression i out (the caller checks it otherwise).
	Skip []bool
	// NoPrefilterMode leaves out expressions Hyperscan cannot take
	// exactly, instead of compiling them as an approximation.
	NoPrefilterMode bool
	// CacheDir overrides the cache directory ("-" disables the cache).
	CacheDir string
}

// matchesEmpty reports whether expr can match the empty string. Hyperscan
// does not report every empty match Go's regexp finds: "(?sm)^$" on "x\n"
// (the empty line after the last newline, which CRS 920290 and 920310
// look for in headers) is missed. Such expressions are left out.
func matchesEmpty(expr string) bool {
	n, err := literals.MinLen(expr)
	return err != nil || n == 0
}

// Compile builds (or loads from the cache) a database for exprs, Go
// syntax as regexp.Compile takes it. Expressions that can match the empty
// string are left out (matchesEmpty).
func Compile(exprs []string, opts Options) (*Database, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	d := &Database{n: len(exprs), covered: make([]bool, len(exprs)), inexact: make([]bool, len(exprs))}
	translated := make([]string, len(exprs))
	for i, expr := range exprs {
		if (i < len(opts.Skip) && opts.Skip[i]) || matchesEmpty(expr) {
			continue
		}
		if tr, err := translate.Translate(expr, translate.Hyperscan); err == nil {
			translated[i] = tr
		}
	}
	key := cacheKey(translated, opts.NoPrefilterMode)
	path := cachePath(opts.CacheDir, key)
	if path != "" {
		if err := d.load(path, key); err == nil {
			d.FromDisk = true
		} else if !errors.Is(err, os.ErrNotExist) {
			d.CacheRejected = err
		}
	}
	if d.db == nil {
		var patterns []string
		var flags, ids []C.uint
		for i, tr := range translated {
			if tr == "" {
				continue
			}
			f, ok := classify(tr, opts.NoPrefilterMode)
			if !ok {
				continue
			}
			d.covered[i], d.inexact[i] = true, f == flagsPrefilter
			patterns = append(patterns, tr)
			flags = append(flags, C.uint(f))
			ids = append(ids, C.uint(i))
		}
		if len(patterns) == 0 {
			return d, nil
		}
		db, err := compileMulti(patterns, flags, ids)
		if err != nil {
			return nil, err
		}
		d.db = db
		if path != "" {
			_ = d.store(path, key) // a cache that cannot be written only costs time
		}
	}
	if C.hs_alloc_scratch(d.db, &d.proto) != C.HS_SUCCESS {
		C.hs_free_database(d.db)
		return nil, errors.New("hyperscan: allocating scratch space failed")
	}
	runtime.SetFinalizer(d, (*Database).free)
	return d, nil
}

// classify compiles one translated expression alone to find the flags it
// takes: exact when possible, else prefilter mode.
func classify(tr string, noPrefilter bool) (C.uint, bool) {
	if compileOne(tr, flagsExact) == nil {
		return flagsExact, true
	}
	if !noPrefilter && compileOne(tr, flagsPrefilter) == nil {
		return flagsPrefilter, true
	}
	return 0, false
}

func compileOne(tr string, flags C.uint) error {
	cs := C.CString(tr)
	defer C.free(unsafe.Pointer(cs))
	var db *C.hs_database_t
	var msg *C.char
	if C.wafsweep_compile_one(cs, flags, &db, &msg) != C.HS_SUCCESS {
		defer C.free(unsafe.Pointer(msg))
		return fmt.Errorf("hyperscan: %s", C.GoString(msg))
	}
	C.hs_free_database(db)
	return nil
}

func compileMulti(patterns []string, flags, ids []C.uint) (*C.hs_database_t, error) {
	cs := make([]*C.char, len(patterns))
	for i, p := range patterns {
		cs[i] = C.CString(p)
	}
	defer func() {
		for _, c := range cs {
			C.free(unsafe.Pointer(c))
		}
	}()
	// The pointer array lives in C memory: cgo forbids passing Go memory
	// that holds pointers.
	arr := (**C.char)(C.malloc(C.size_t(len(cs)) * C.size_t(unsafe.Sizeof(cs[0]))))
	defer C.free(unsafe.Pointer(arr))
	copy(unsafe.Slice(arr, len(cs)), cs)
	var db *C.hs_database_t
	var msg *C.char
	if C.wafsweep_compile_multi((**C.char)(unsafe.Pointer(arr)), &flags[0], &ids[0], C.uint(len(patterns)), &db, &msg) != C.HS_SUCCESS {
		defer C.free(unsafe.Pointer(msg))
		return nil, fmt.Errorf("hyperscan: compiling %d expressions: %s", len(patterns), C.GoString(msg))
	}
	return db, nil
}

func (d *Database) free() {
	d.scratch.freeAll()
	if d.proto != nil {
		C.hs_free_scratch(d.proto)
	}
	if d.db != nil {
		C.hs_free_database(d.db)
	}
}

// Covered reports whether expression i is in the database.
func (d *Database) Covered(i int) bool { return d.covered[i] }

// Inexact reports whether expression i was compiled in prefilter mode.
func (d *Database) Inexact(i int) bool { return d.inexact[i] }

// Scan appends the ids of the expressions matching value (valid UTF-8) to
// hits, using buf, which must come from NewIDs.
func (d *Database) Scan(value string, hits []int32, buf *IDs) ([]int32, error) {
	ids := buf.buf
	if d.db == nil {
		return hits, nil
	}
	s := d.scratch.get()
	if s == nil {
		if C.hs_clone_scratch(d.proto, &s) != C.HS_SUCCESS {
			return hits, errors.New("hyperscan: cloning scratch space failed")
		}
		d.scratch.cloned.Add(1)
	}
	var n C.uint
	var data *C.char
	if len(value) > 0 {
		data = (*C.char)(unsafe.Pointer(unsafe.StringData(value)))
	} else {
		data = (*C.char)(unsafe.Pointer(&ids[0])) // any valid pointer: zero bytes are read
	}
	err := C.wafsweep_scan(d.db, data, C.uint(len(value)), s, &ids[0], C.uint(len(ids)), &n)
	d.scratch.put(s)
	runtime.KeepAlive(value)
	if err != C.HS_SUCCESS {
		return hits, fmt.Errorf("hyperscan: scan failed (%d)", int(err))
	}
	for _, id := range ids[:n] {
		hits = append(hits, int32(id))
	}
	return hits, nil
}

// scratchList keeps the scratch spaces of finished scans for the next
// ones: one per scan running at once, so as many as the process has
// scanning threads. Not a sync.Pool: a pool drops what it holds at every
// other collection, and a dropped scratch is C memory nobody frees (it
// leaked a scratch space per pooled entry per collection, megabytes a
// minute under load).
type scratchList struct {
	mu   sync.Mutex
	free []*C.hs_scratch_t
	// cloned counts the scratch spaces ever made, for tests.
	cloned atomic.Int64
}

// maxIdleScratch bounds the spaces kept: more scans than this at once
// (threads beyond any Envoy's workers and inspection threads) free theirs.
const maxIdleScratch = 256

func (l *scratchList) get() *C.hs_scratch_t {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.free)
	if n == 0 {
		return nil
	}
	s := l.free[n-1]
	l.free = l.free[:n-1]
	return s
}

func (l *scratchList) put(s *C.hs_scratch_t) {
	l.mu.Lock()
	if len(l.free) < maxIdleScratch {
		l.free = append(l.free, s)
		s = nil
	}
	l.mu.Unlock()
	if s != nil {
		C.hs_free_scratch(s)
	}
}

func (l *scratchList) freeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.free {
		C.hs_free_scratch(s)
	}
	l.free = nil
}

// IDs is a buffer Scan fills; one per concurrent scan.
type IDs struct{ buf []C.uint }

// NewIDs returns a buffer with room for every expression of d.
func (d *Database) NewIDs() *IDs { return &IDs{make([]C.uint, max(d.n, 1))} }

func cacheKey(translated []string, noPrefilter bool) string {
	h := sha256.New()
	fmt.Fprintf(h, "hyperscan %s flags %d/%d noprefilter %v\n", Version(), flagsExact, flagsPrefilter, noPrefilter)
	for i, p := range translated {
		fmt.Fprintf(h, "%d %d %s\n", i, len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func cachePath(dir, key string) string {
	if dir == "-" {
		return ""
	}
	if dir == "" {
		dir = os.Getenv("CORAZAWAF_HS_CACHE")
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "corazawaf", "hyperscan")
	}
	return filepath.Join(dir, key+".hsdb")
}

// A cache file is one byte per expression (0 left out, 1 exact, 2
// prefilter mode), the serialized database, then a SHA-256 digest of the
// two under the cache key. The digest matters: a flipped "exact" byte would
// make the accelerator treat an expression Hyperscan never scans for as one
// that cannot match, and skip its rule. It catches corruption and a file
// written for other expressions; a file another user could have written
// (not owned by this user or root, or writable by group or others, or in
// such a directory) is not read at all.
func (d *Database) load(path, key string) error {
	if err := trustedCacheFile(path); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) <= d.n+sha256.Size {
		return fmt.Errorf("%s: truncated", path)
	}
	content, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if !bytes.Equal(cacheDigest(key, content), sum) {
		return fmt.Errorf("%s: digest mismatch (corrupt, or not written for these expressions)", path)
	}
	b = content
	for i, c := range b[:d.n] {
		d.covered[i], d.inexact[i] = c != 0, c == 2
	}
	body := b[d.n:]
	// Hyperscan reads the serialized form straight from Go memory (it
	// copies what it keeps): a C copy would be freed into Envoy's
	// allocator, which keeps freed memory, so every load would leave the
	// database's size behind in Envoy's RSS (8 MB for full CRS).
	var db *C.hs_database_t
	if C.hs_deserialize_database((*C.char)(unsafe.Pointer(unsafe.SliceData(body))), C.size_t(len(body)), &db) != C.HS_SUCCESS {
		clear(d.covered)
		clear(d.inexact)
		// Hyperscan refuses a database of another version, or one compiled
		// for a processor with instructions this one lacks (an image's
		// cache on another node): it is compiled again here.
		return fmt.Errorf("hyperscan: %s is not a database of this version or processor", path)
	}
	d.db = db
	return nil
}

// cacheDigest binds a cache file's content to its key.
func cacheDigest(key string, content []byte) []byte {
	h := sha256.New()
	fmt.Fprintf(h, "corazawaf hyperscan cache %s\n", key)
	h.Write(content)
	return h.Sum(nil)
}

// trustedCacheFile refuses a cache file, or a directory holding it, that
// someone other than this user or root owns or may write.
func trustedCacheFile(path string) error {
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner to check", p)
		}
		if owner := int(st.Uid); owner != os.Geteuid() && owner != 0 {
			return fmt.Errorf("%s: owned by uid %d, not this user (%d) or root", p, owner, os.Geteuid())
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
			return fmt.Errorf("%s: writable by group or others (%v)", p, fi.Mode().Perm())
		}
	}
	return nil
}

func (d *Database) store(path, key string) error {
	var serialized *C.char
	var size C.size_t
	if C.hs_serialize_database(d.db, &serialized, &size) != C.HS_SUCCESS {
		return errors.New("hyperscan: serializing failed")
	}
	defer C.free(unsafe.Pointer(serialized))
	head := make([]byte, d.n)
	for i := range head {
		switch {
		case d.inexact[i]:
			head[i] = 2
		case d.covered[i]:
			head[i] = 1
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	content := append(head, C.GoBytes(unsafe.Pointer(serialized), C.int(size))...)
	if err := os.WriteFile(tmp, append(content, cacheDigest(key, content)...), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

package dataset

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A sweep's run directories keep what each configuration ran with: Envoy's
// and nginx's configuration, their logs. Written to be run, they name the
// machine's paths (the dataset's directory, the repository's build, the
// temporary directory), which mean nothing on another machine and say more
// about it than a dataset needs to. Once a configuration is torn down the
// sweep rewrites them with placeholders (MakePortable); FindMachinePaths is
// the check that none is left.

// PathRoot is a directory of the machine and what a portable file says
// instead of it.
type PathRoot struct {
	Path        string // absolute, without a trailing slash
	Placeholder string // e.g. "<repo>"
}

// MachineRoots are the directories of this machine that a dataset's files
// may name: the dataset's own, the repository, the home and the temporary
// directory. Empty or relative ones are left out; the longest come first,
// so that a dataset inside the repository is named as the dataset.
func MachineRoots(datasetDir, repoDir string) []PathRoot {
	home, _ := os.UserHomeDir()
	candidates := []PathRoot{
		{datasetDir, "<dataset>"},
		{repoDir, "<repo>"},
		{home, "<home>"},
		{os.TempDir(), "<tmp>"},
		{"/tmp", "<tmp>"},
	}
	var roots []PathRoot
	for _, r := range candidates {
		if abs, err := filepath.Abs(r.Path); err == nil && r.Path != "" && abs != "/" {
			r.Path = filepath.Clean(abs)
			if !slices.ContainsFunc(roots, func(o PathRoot) bool { return o.Path == r.Path }) {
				roots = append(roots, r)
			}
		}
	}
	slices.SortStableFunc(roots, func(a, b PathRoot) int { return cmp.Compare(len(b.Path), len(a.Path)) })
	return roots
}

// AddRoot adds root to roots, kept longest first, unless its path is
// already there or is not absolute.
func AddRoot(roots []PathRoot, root PathRoot) []PathRoot {
	if !filepath.IsAbs(root.Path) || filepath.Clean(root.Path) == "/" {
		return roots
	}
	root.Path = filepath.Clean(root.Path)
	if slices.ContainsFunc(roots, func(o PathRoot) bool { return o.Path == root.Path }) {
		return roots
	}
	roots = append(slices.Clone(roots), root)
	slices.SortStableFunc(roots, func(a, b PathRoot) int { return cmp.Compare(len(b.Path), len(a.Path)) })
	return roots
}

// MakePortable rewrites every text file under dir with roots replaced by
// their placeholders. Compressed and binary files are left alone.
func MakePortable(dir string, roots []PathRoot) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isText(path) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if looksBinary(data) {
			return nil
		}
		portable := replaceRoots(data, roots)
		if bytes.Equal(portable, data) {
			return nil
		}
		if err := writeFileAtomic(path, func(w io.Writer) error { _, err := w.Write(portable); return err }); err != nil {
			return fmt.Errorf("making %s portable: %w", path, err)
		}
		return nil
	})
}

// PortableText is s with roots replaced by their placeholders (for a
// command line kept in the metadata).
func PortableText(s string, roots []PathRoot) string { return string(replaceRoots([]byte(s), roots)) }

// FindMachinePaths returns the paths under roots that data names.
func FindMachinePaths(data []byte, roots []PathRoot) []string {
	var found []string
	for _, r := range roots {
		for at := range occurrences(data, r.Path) {
			end := at + len(r.Path)
			for end < len(data) && isPathByte(data[end]) {
				end++
			}
			found = append(found, string(data[at:end]))
		}
	}
	return found
}

// replaceRoots replaces each occurrence of a root that is a whole path
// prefix ("/tmp/x" or "/tmp", not "/tmpfs"), longest root first.
func replaceRoots(data []byte, roots []PathRoot) []byte {
	for _, r := range roots {
		var out []byte
		last := 0
		for at := range occurrences(data, r.Path) {
			out = append(out, data[last:at]...)
			out = append(out, r.Placeholder...)
			last = at + len(r.Path)
		}
		if out != nil {
			data = append(out, data[last:]...)
		}
	}
	return data
}

// occurrences yields where path starts in data as a whole path prefix:
// not inside a longer name on either side.
func occurrences(data []byte, path string) func(func(int) bool) {
	return func(yield func(int) bool) {
		p := []byte(path)
		for from := 0; ; {
			i := bytes.Index(data[from:], p)
			if i < 0 {
				return
			}
			at, end := from+i, from+i+len(p)
			before := at == 0 || !isPathByte(data[at-1])
			after := end == len(data) || data[end] == '/' || !isPathByte(data[end])
			if before && after && !yield(at) {
				return
			}
			from = end
		}
	}
}

// isPathByte reports a byte that can continue a path in a config or a
// log line.
func isPathByte(b byte) bool {
	return b == '/' || b == '.' || b == '_' || b == '-' || b == '+' || b == '@' || b == '~' ||
		'0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// isText tells the files worth reading: not compressed archives.
func isText(path string) bool { return !strings.HasSuffix(path, ".gz") }

func looksBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0
}

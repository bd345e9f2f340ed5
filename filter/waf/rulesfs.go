package waf

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
)

// builtin holds the include names that published benchmark policies use but
// coraza-coreruleset does not ship (`@coraza.conf`, `@crs-setup.conf`). They
// are thin files of our own that include coraza-coreruleset's files.
//
//go:embed builtin
var builtin embed.FS

// RulesFS resolves Include and @...FromFile names, in this order: our own
// embedded files, coraza-coreruleset, then the local filesystem.
//
// Coraza joins an included file's name to its parent's directory, so a name
// can arrive as "dir/@owasp_crs/x.conf"; for the embedded layers only the part
// from the first '@' on is looked up, as coraza-coreruleset itself does.
type RulesFS struct {
	layers []fs.FS
}

// NewRulesFS returns the standard resolution order.
func NewRulesFS() RulesFS {
	own, err := fs.Sub(builtin, "builtin")
	if err != nil {
		panic(err) // the embedded directory is part of the build
	}
	return RulesFS{layers: []fs.FS{own, coreruleset.FS}}
}

// Open implements fs.FS.
func (r RulesFS) Open(name string) (fs.File, error) {
	if embeddedName, ok := atName(name); ok {
		for _, layer := range r.layers {
			f, err := layer.Open(embeddedName)
			if err == nil {
				return f, nil
			}
		}
	}
	return os.Open(localPath(name))
}

// ReadFile implements fs.ReadFileFS; Coraza reads every include through it.
func (r RulesFS) ReadFile(name string) ([]byte, error) {
	if embeddedName, ok := atName(name); ok {
		for _, layer := range r.layers {
			b, err := fs.ReadFile(layer, embeddedName)
			if err == nil {
				return b, nil
			}
		}
	}
	b, err := os.ReadFile(localPath(name))
	if err != nil {
		return nil, fmt.Errorf("%s: not an embedded rule file (@coraza.conf, @crs-setup.conf, @owasp_crs/...) and not readable locally: %w", name, errors.Unwrap(err))
	}
	return b, nil
}

// Glob implements fs.GlobFS, used by `Include @owasp_crs/*.conf`.
func (r RulesFS) Glob(pattern string) ([]string, error) {
	if embeddedPattern, ok := atName(pattern); ok {
		for _, layer := range r.layers {
			matches, err := fs.Glob(layer, embeddedPattern)
			if err != nil {
				return nil, err
			}
			if len(matches) > 0 {
				return matches, nil
			}
		}
	}
	return filepath.Glob(localPath(pattern))
}

// atName returns the part of name from its first '@' on, the form in which
// the embedded layers know their files.
func atName(name string) (string, bool) {
	i := strings.IndexByte(name, '@')
	if i < 0 {
		return "", false
	}
	return name[i:], true
}

// localPath keeps absolute paths absolute: Coraza hands them over unchanged.
func localPath(name string) string {
	return filepath.FromSlash(name)
}

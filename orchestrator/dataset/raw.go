package dataset

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteRawGzip archives a raw result as dir/relName, gzip-compressed and
// written atomically. relName is the path stored in StepRow.RawFile (name it
// *.json.gz); it must stay inside dir.
func WriteRawGzip(dir, relName string, jsonBytes []byte) error {
	if !filepath.IsLocal(relName) {
		return fmt.Errorf("raw file %q: want a relative path inside %s", relName, dir)
	}
	path := filepath.Join(dir, relName)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("raw file: %w", err)
	}
	return writeFileAtomic(path, func(w io.Writer) error {
		zw := gzip.NewWriter(w)
		if _, err := zw.Write(jsonBytes); err != nil {
			return err
		}
		return zw.Close()
	})
}

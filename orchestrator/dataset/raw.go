package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
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

// StripPayload removes the top-level "Payload" field of a Fortio result JSON
// (the request body, base64, copied from the run options) and keeps every
// other field as it was. The result is compact JSON with keys sorted.
func StripPayload(fortioJSON []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(fortioJSON, &fields); err != nil {
		return nil, fmt.Errorf("strip payload: want a JSON object: %w", err)
	}
	delete(fields, "Payload")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep strings byte for byte
	if err := enc.Encode(fields); err != nil {
		return nil, fmt.Errorf("strip payload: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

package sweep

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A run directory keeps the first whole records of its audit log, not the
// log: whole lines up to auditSampleBytes.
func TestKeepAuditSample(t *testing.T) {
	record := func(i int) string {
		return fmt.Sprintf(`{"transaction":{"id":"tx-%06d","padding":"%0900d"}}`+"\n", i, 0)
	}
	var big bytes.Buffer
	for i := 0; big.Len() < 3*auditSampleBytes; i++ {
		big.WriteString(record(i))
	}
	tests := []struct {
		name    string
		log     []byte // nil: no log was written
		want    []byte
		written bool
	}{
		{"no log", nil, nil, false},
		{"a small log is kept whole", []byte(record(0) + record(1)), []byte(record(0) + record(1)), true},
		{"a large log is cut at the last whole record", big.Bytes(), big.Bytes()[:bytes.LastIndexByte(big.Bytes()[:auditSampleBytes], '\n')+1], true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "audit.log")
			if tc.log != nil {
				if err := os.WriteFile(log, tc.log, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := keepAuditSample(log); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(log); !os.IsNotExist(err) {
				t.Errorf("the whole log is still there: %v", err)
			}
			got, err := os.ReadFile(filepath.Join(dir, AuditSampleFile))
			if !tc.written {
				if !os.IsNotExist(err) {
					t.Errorf("a sample without a log: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) || len(got) > auditSampleBytes {
				t.Errorf("sample of %d bytes, want the %d bytes of whole records", len(got), len(tc.want))
			}
		})
	}
}

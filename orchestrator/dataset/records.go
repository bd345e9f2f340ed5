package dataset

import (
	"encoding/csv"
	"fmt"
	"os"
	"slices"
)

// ReadRecords reads a CSV file with a header line into one map per row,
// column name to cell, refusing a file that lacks a column in want. It is
// for the benchmark CSVs (make bench, module-cost), which have no typed
// schema here; a sweep's own files have theirs (ReadSteps, ReadKnees).
func ReadRecords(path string, want ...string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	header := records[0]
	for _, w := range want {
		if !slices.Contains(header, w) {
			return nil, fmt.Errorf("%s: no %s column", path, w)
		}
	}
	rows := make([]map[string]string, 0, len(records)-1)
	for _, rec := range records[1:] {
		row := make(map[string]string, len(header))
		for i, name := range header {
			row[name] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

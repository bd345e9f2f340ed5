package dataset

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// StepWriter appends rows to steps.csv so that a crash at any moment leaves
// a readable file (see appender).
type StepWriter struct {
	a *appender[StepRow]
}

// OpenStepWriter opens path for appending, creating it with the header when
// it is new or empty. An existing file must carry the current header.
func OpenStepWriter(path string) (*StepWriter, error) {
	if err := reencodeSteps(path); err != nil {
		return nil, fmt.Errorf("open steps %s: %w", path, err)
	}
	a, err := openAppender(path, stepSchema)
	if err != nil {
		return nil, fmt.Errorf("open steps %s: %w", path, err)
	}
	return &StepWriter{a}, nil
}

// reencodeSteps rewrites, in one atomic replacement, a steps.csv whose rows
// an older wafsweep of the same schema formatted differently (figures to 16
// digits before they were rounded), so that a resumed dataset reads the
// same from its first row to its last. A missing, empty or foreign file is
// left to prepare, which repairs or refuses it.
func reencodeSteps(path string) error {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return nil
	}
	whole := withoutTornLine(data)
	var out bytes.Buffer
	if err := WriteStepsHeader(&out); err != nil {
		return err
	}
	err = readCSV(whole, stepSchema, func(row StepRow, _ int) error {
		line, err := csvLine(stepSchema.encode(&row))
		out.Write(line)
		return err
	})
	if err != nil || bytes.Equal(out.Bytes(), whole) {
		return nil // prepare reports a foreign header; nothing to re-encode
	}
	return writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(out.Bytes())
		return err
	})
}

// Write appends one row and makes it durable before returning.
func (w *StepWriter) Write(row StepRow) error {
	if err := w.a.write(&row); err != nil {
		return fmt.Errorf("append step (%s) to %s: %w", row.key(), w.a.path, err)
	}
	return nil
}

// Close closes the file.
func (w *StepWriter) Close() error {
	if err := w.a.close(); err != nil {
		return fmt.Errorf("close steps %s: %w", w.a.path, err)
	}
	return nil
}

// appender appends rows of one schema to a CSV file so that a crash at
// any moment leaves a readable file: each row is written with a single
// write call, then fsynced, and on open a torn last line (no trailing
// newline) is cut off.
type appender[T any] struct {
	f      *os.File
	path   string
	schema schema[T]
}

// openAppender opens path for appending, creating it with the header when
// it is new or empty. An existing file must carry s's header.
func openAppender[T any](path string, s schema[T]) (*appender[T], error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	a := &appender[T]{f: f, path: path, schema: s}
	if err := a.prepare(); err != nil {
		f.Close()
		return nil, err
	}
	return a, nil
}

// prepare repairs a torn tail, then checks or writes the header.
func (a *appender[T]) prepare() error {
	data, err := io.ReadAll(io.NewSectionReader(a.f, 0, 1<<62))
	if err != nil {
		return err
	}
	whole := withoutTornLine(data)
	if len(whole) < len(data) {
		// With O_APPEND the next write goes to the new end of file.
		if err := a.f.Truncate(int64(len(whole))); err != nil {
			return fmt.Errorf("truncate torn line: %w", err)
		}
	}
	if len(whole) == 0 {
		line, err := csvLine(a.schema.header())
		if err != nil {
			return err
		}
		return a.writeSynced(line)
	}
	return readCSV(whole[:bytes.IndexByte(whole, '\n')+1], a.schema, nil)
}

func (a *appender[T]) write(row *T) error {
	line, err := csvLine(a.schema.encode(row))
	if err != nil {
		return err
	}
	return a.writeSynced(line)
}

func (a *appender[T]) writeSynced(b []byte) error {
	if _, err := a.f.Write(b); err != nil {
		return err
	}
	return a.f.Sync()
}

func (a *appender[T]) close() error { return a.f.Close() }

package dataset

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// column binds a CSV column name to a field of row type T. Each schema is one
// ordered list of columns, used by both writer and reader, so the two can
// never disagree about order or format.
type column[T any] struct {
	name string
	get  func(*T) string
	set  func(*T, string) error
	// added marks a column appended to the schema after files of the same
	// schema version were written: such a file ends before it, and reads
	// it as an empty cell ("not measured"). Added columns come last.
	added bool
}

// added returns c marked as added (see column.added).
func added[T any](c column[T]) column[T] {
	c.added = true
	return c
}

type schema[T any] []column[T]

func (s schema[T]) header() []string {
	names := make([]string, len(s))
	for i, c := range s {
		names[i] = c.name
	}
	return names
}

func (s schema[T]) encode(row *T) []string {
	rec := make([]string, len(s))
	for i, c := range s {
		rec[i] = c.get(row)
	}
	return rec
}

// decode reads one record. A record of a file that ends before the added
// columns (checkHeader allowed it) gets empty cells for them.
func (s schema[T]) decode(rec []string) (T, error) {
	var row T
	if len(rec) > len(s) || len(rec) < len(s) && !s[len(rec)].added {
		return row, fmt.Errorf("%d fields, want %d", len(rec), len(s))
	}
	for i, c := range s {
		cell := ""
		if i < len(rec) {
			cell = rec[i]
		}
		if err := c.set(&row, cell); err != nil {
			return row, fmt.Errorf("column %s: %w", c.name, err)
		}
	}
	return row, nil
}

// checkHeader reports the first difference between a file's header and the
// declared one.
func (s schema[T]) checkHeader(got []string) error {
	want := s.header()
	for i := 0; i < len(want) || i < len(got); i++ {
		switch {
		case i >= len(got) && s[i].added:
			return nil // written before the added columns (see column.added)
		case i >= len(got):
			return fmt.Errorf("header ends before column %d %q", i+1, want[i])
		case i >= len(want):
			return fmt.Errorf("header has extra column %d %q", i+1, got[i])
		case got[i] != want[i]:
			return fmt.Errorf("header column %d is %q, want %q", i+1, got[i], want[i])
		}
	}
	return nil
}

// Field codecs. Each takes an accessor returning a pointer to the field, so a
// single function serves both directions.

func strCol[T any](name string, field func(*T) *string) column[T] {
	return column[T]{
		name: name,
		get:  func(r *T) string { return *field(r) },
		set:  func(r *T, v string) error { *field(r) = v; return nil },
	}
}

func intCol[T any](name string, field func(*T) *int) column[T] {
	return column[T]{
		name: name,
		get:  func(r *T) string { return strconv.Itoa(*field(r)) },
		set: func(r *T, v string) (err error) {
			*field(r), err = strconv.Atoi(v)
			return err
		},
	}
}

// countCol is an int64 column added after files that did not count what
// it counts, because it did not happen then (no attack was sent): their
// empty cells read as 0.
func countCol[T any](name string, field func(*T) *int64) column[T] {
	return zeroIfEmpty(int64Col(name, field))
}

// zeroIfEmpty reads an empty cell of an int column as 0: for a column
// added after files that did not derive it (their rows read as "none").
func zeroIfEmpty[T any](c column[T]) column[T] { return emptyReadsAs(c, "0") }

// unknownIfEmpty reads an empty cell of an int column as -1, "not
// counted": for a column added after files that did not count it.
func unknownIfEmpty[T any](c column[T]) column[T] { return emptyReadsAs(c, "-1") }

// emptyReadsAs makes c read an empty cell as cell.
func emptyReadsAs[T any](c column[T], cell string) column[T] {
	set := c.set
	c.set = func(r *T, v string) error {
		if v == "" {
			v = cell
		}
		return set(r, v)
	}
	return c
}

func int64Col[T any](name string, field func(*T) *int64) column[T] {
	return column[T]{
		name: name,
		get:  func(r *T) string { return strconv.FormatInt(*field(r), 10) },
		set: func(r *T, v string) (err error) {
			*field(r), err = strconv.ParseInt(v, 10, 64)
			return err
		},
	}
}

// floatCol writes NaN, "not measured", as an empty cell, which spreadsheet
// and dataframe tools read back as missing, and other figures rounded to
// significantDigits (see formatFloat).
func floatCol[T any](name string, field func(*T) *float64) column[T] {
	return column[T]{
		name: name,
		get:  func(r *T) string { return formatFloat(*field(r)) },
		set: func(r *T, v string) (err error) {
			*field(r), err = parseFloat(v)
			return err
		},
	}
}

// significantDigits is what a CSV figure keeps. No measurement here is
// better than about 1 part in 10^4 (a 20 s window at 10k RPS counts 200,000
// requests; CPU clocks tick in 10 ms), so six digits lose nothing real and
// spare readers 4.111180253059536.
const significantDigits = 6

// formatFloat writes v in plain decimal notation (never an exponent, which
// some spreadsheet locales misread) with significantDigits digits, trailing
// zeros dropped.
func formatFloat(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	if v == 0 || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	decimals := max(significantDigits-1-int(math.Floor(math.Log10(math.Abs(v)))), 0)
	out := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}

func parseFloat(v string) (float64, error) {
	if v == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(v, 64)
}

func boolCol[T any](name string, field func(*T) *bool) column[T] {
	return column[T]{
		name: name,
		get:  func(r *T) string { return strconv.FormatBool(*field(r)) },
		set: func(r *T, v string) (err error) {
			*field(r), err = strconv.ParseBool(v)
			return err
		},
	}
}

// transportCols are the two columns of a plan.Transport: protocol (h1,
// h2) and tls. They were added after every sweep before them measured
// HTTP/1.1 in clear, so their empty cells read as that, a fact rather
// than a guess.
func transportCols[T any](field func(*T) *plan.Transport) []column[T] {
	return []column[T]{
		added(column[T]{
			name: "protocol",
			get:  func(r *T) string { return field(r).Protocol },
			set: func(r *T, v string) error {
				if v == "" {
					v = plan.ProtocolH1
				}
				field(r).Protocol = v
				return nil
			},
		}),
		added(column[T]{
			name: "tls",
			get:  func(r *T) string { return strconv.FormatBool(field(r).TLS) },
			set: func(r *T, v string) (err error) {
				if v == "" {
					field(r).TLS = false
					return nil
				}
				field(r).TLS, err = strconv.ParseBool(v)
				return err
			},
		}),
	}
}

// timeCol writes RFC 3339 in UTC to the second; the zero time is empty.
func timeCol[T any](name string, field func(*T) *time.Time) column[T] {
	return column[T]{
		name: name,
		get: func(r *T) string {
			if t := *field(r); !t.IsZero() {
				return t.UTC().Format(time.RFC3339)
			}
			return ""
		},
		set: func(r *T, v string) (err error) {
			if v == "" {
				*field(r) = time.Time{}
				return nil
			}
			*field(r), err = time.Parse(time.RFC3339, v)
			return err
		},
	}
}

// listCol joins with semicolons. Semicolons and line breaks inside an item
// would break the list apart, so they are replaced with commas and spaces.
func listCol[T any](name string, field func(*T) *[]string) column[T] {
	return column[T]{
		name: name,
		get: func(r *T) string {
			items := make([]string, len(*field(r)))
			for i, it := range *field(r) {
				items[i] = listItemReplacer.Replace(it)
			}
			return strings.Join(items, ";")
		},
		set: func(r *T, v string) error {
			*field(r) = nil
			if v != "" {
				*field(r) = strings.Split(v, ";")
			}
			return nil
		},
	}
}

var listItemReplacer = strings.NewReplacer(";", ",", "\r\n", " ", "\n", " ", "\r", " ")

// Package report turns the datasets of a sweep into SVG plots and report.md.
// The SVG is hand-written (no dependencies), XML-escaped and deterministic:
// the same datasets give byte-identical files, so reports diff cleanly.
package report

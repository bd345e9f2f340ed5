// Package report turns the datasets of a sweep into SVG plots, report.md and
// report.html. The SVG is hand-written, XML-escaped and deterministic: the
// same datasets give byte-identical files, so reports diff cleanly.
// report.html is report.md converted (goldmark) with the plots inline.
package report

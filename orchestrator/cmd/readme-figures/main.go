// Command readme-figures renders the generated sections of a document (the
// project's README) again from the committed datasets they name (see
// report.RegenerateSections): `make readme-figures`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wafsweep/wafsweep/orchestrator/report"
)

func main() {
	check := flag.Bool("check", false, "only report whether the document is up to date (exit 1 if not)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: readme-figures [-check] DOCUMENT.md")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *check); err != nil {
		fmt.Fprintln(os.Stderr, "readme-figures:", err)
		os.Exit(1)
	}
}

func run(path string, check bool) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fresh, err := report.RegenerateSections(doc, filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case bytes.Equal(doc, fresh):
		return nil
	case check:
		return fmt.Errorf("%s: its generated sections differ from the datasets they name: run make readme-figures", path)
	}
	return os.WriteFile(path, fresh, 0o644)
}

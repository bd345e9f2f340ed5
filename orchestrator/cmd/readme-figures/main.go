// Command readme-figures renders the generated sections of documents (the
// project's READMEs) again from the committed datasets they name (see
// report.RegenerateSections): `make readme-figures`. A document without a
// generated section is left as it is.
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
		fmt.Fprintln(flag.CommandLine.Output(), "usage: readme-figures [-check] DOCUMENT.md...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, doc := range flag.Args() {
		if err := run(doc, *check); err != nil {
			fmt.Fprintln(os.Stderr, "readme-figures:", err)
			failed = true
		}
	}
	if failed {
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

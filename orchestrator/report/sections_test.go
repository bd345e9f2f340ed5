package report

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// Every figure the README quotes from a dataset is what that dataset
// says: its generated sections are rendered again from the committed
// datasets they name, and must come out unchanged.
func TestREADMEFiguresComeFromTheDatasets(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !sectionBegin.Match(doc) {
		t.Fatal("README.md has no generated section")
	}
	fresh, err := RegenerateSections(doc, "../..")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, fresh) {
		t.Errorf("README.md's generated sections differ from the datasets they name: run make readme-figures")
	}
}

func TestRegenerateSectionsRefusesBrokenMarkers(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"<!-- BEGIN generated: t (make readme-figures: results/x) -->\nno end\n", `has no "<!-- END generated: t -->" line`},
		{"<!-- BEGIN generated: t (make readme-figures: ) -->\n<!-- END generated: t -->", "names no dataset"},
		{"<!-- BEGIN generated: t (make readme-figures: nowhere) -->\n<!-- END generated: t -->", "nowhere/metadata.json"},
	}
	for _, tc := range tests {
		if _, err := RegenerateSections([]byte(tc.doc), t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.doc, err, tc.want)
		}
	}
	plain := []byte("no sections here\n")
	if got, err := RegenerateSections(plain, "."); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("a document without sections: %q %v", got, err)
	}
}

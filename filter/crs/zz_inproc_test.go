package crs

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	txhttp "github.com/corazawaf/coraza/v3/http"
	"github.com/corazawaf/coraza/v3/types"
)

func TestZZInProcess(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "error.log")
	f, _ := os.Create(logPath)
	w := bufio.NewWriter(f)
	waf, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).
		WithDirectives(strings.Join(crsTestDirectives, "\n")).
		WithErrorCallback(func(mr types.MatchedRule) { w.WriteString(mr.ErrorLog() + "\n"); w.Flush() }))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: txhttp.WrapHandler(waf, http.HandlerFunc(serveReflection))}
	go srv.Serve(l)
	defer srv.Close()
	suite, _ := loadSuite()
	p := &proxy{port: l.Addr().(*net.TCPAddr).Port, logPath: logPath}
	rc, _ := newRunnerConfig(p)
	out, err := runSuite(rc, suite)
	if err != nil {
		t.Fatal(err)
	}
	r := classify(suite, out, map[string]ignoreEntry{})
	t.Logf("in-process: %d passed, failed %v", len(r.passed), r.unexpected)
}

package crs

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestZZProbe(t *testing.T) {
	extra := strings.Split(os.Getenv("PROBE_RULES"), "\n")
	dirs := append([]string{}, crsTestDirectives...)
	if os.Getenv("PROBE_NOCRS") == "1" {
		dirs = dirs[:5]
	}
	for _, e := range extra {
		if e != "" {
			dirs = append(dirs, e)
		}
	}
	b, _ := json.Marshal(map[string]any{"directives": dirs})
	p := startProxy(t, string(b), startReflector(t))
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/reflect", p.port), strings.NewReader(os.Getenv("PROBE_BODY")))
	req.Header.Set("Content-Type", "application/json")
	for _, h := range strings.Fields(os.Getenv("PROBE_HEADERS")) {
		req.Header.Set(h, os.Getenv("PROBE_VALUE"))
	}
	req.Host = "localhost"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("status %d body %q headers %v", resp.StatusCode, body, resp.Header)
	time.Sleep(300 * time.Millisecond)
	log, _ := os.ReadFile(p.logPath)
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "dynamic_modules") {
			if i := strings.Index(l, "[id "); i > 0 {
				t.Log(l[i:min(len(l), i+200)])
			} else {
				t.Log(l)
			}
		}
	}
}

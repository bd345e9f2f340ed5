package crs

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// The CRS tests expect albedo (github.com/coreruleset/albedo) as the
// backend: POST /reflect with a JSON spec answers with the status, headers
// and body it names, which is how the RESPONSE-95x tests put leaking pages
// in front of the response rules. Every other request gets an empty 200.
// This is our own minimal implementation of that contract.

// reflectSpec is the JSON body of a POST /reflect.
type reflectSpec struct {
	Status      int               `json:"status"`
	Headers     map[string]string `json:"headers"`
	Body        string            `json:"body"`
	EncodedBody string            `json:"encodedBody"` // base64, for bytes JSON cannot carry
}

// startReflector serves on 127.0.0.1 until the test ends and returns its port.
func startReflector(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("reflector: listen: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(serveReflection), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func serveReflection(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reflector: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	// text/plain is in SecResponseBodyMimeType of the test configuration,
	// so every response body is inspected unless a spec names another type.
	w.Header().Set("Content-Type", "text/plain")
	if r.Method != http.MethodPost || r.URL.Path != "/reflect" {
		w.WriteHeader(http.StatusOK)
		return
	}
	spec, payload, err := parseReflectSpec(body)
	if err != nil {
		http.Error(w, "reflector: "+err.Error(), http.StatusBadRequest)
		return
	}
	for name, value := range spec.Headers {
		w.Header().Set(name, value)
	}
	w.WriteHeader(spec.Status)
	_, _ = w.Write(payload)
}

func parseReflectSpec(body []byte) (reflectSpec, []byte, error) {
	var spec reflectSpec
	if err := json.Unmarshal(body, &spec); err != nil {
		return spec, nil, fmt.Errorf("request body is not a reflection spec: %w", err)
	}
	switch {
	case spec.Status == 0:
		spec.Status = http.StatusOK
	case spec.Status < 100 || spec.Status > 599:
		return spec, nil, fmt.Errorf("status %d is not an HTTP status", spec.Status)
	}
	if spec.Body != "" || spec.EncodedBody == "" {
		return spec, []byte(spec.Body), nil
	}
	payload, err := base64.StdEncoding.DecodeString(spec.EncodedBody)
	if err != nil {
		return spec, nil, errors.New("encodedBody is not base64")
	}
	return spec, payload, nil
}

package e2e

import (
	"debug/buildinfo"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// filter_config as a google.protobuf.Struct (what hand-written YAML gives)
// works like the StringValue form.
func TestStructConfig(t *testing.T) {
	p := startProxy(t, proxyOptions{config: `{"mode":"block","directives":[` + tierDirectives(t, "headers-only") + `]}`, asStruct: true})
	if resp := p.do(t, request{path: "/admin"}); resp.status != 403 {
		t.Fatalf("status %d, want 403", resp.status)
	}
	if resp := p.do(t, request{path: "/shop"}); resp.status != 200 {
		t.Fatalf("status %d, want 200", resp.status)
	}
}

// Both ends of the connection reach Coraza with their ports: Envoy 1.40
// puts the port in the address attribute, and the module splits it.
func TestConnectionReachesCoraza(t *testing.T) {
	cfg := `{"directives":["SecRuleEngine On",` +
		`"SecRule REQUEST_URI \"@beginsWith /whoami\" \"id:9201,phase:1,pass,log,msg:'conn %{REMOTE_ADDR} %{REMOTE_PORT} %{SERVER_ADDR} %{SERVER_PORT} %{REQUEST_HEADERS.host}'\""]}`
	p := startProxy(t, proxyOptions{config: cfg})
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	clientPort := conn.LocalAddr().(*net.TCPAddr).Port
	fmt.Fprint(conn, "GET /whoami HTTP/1.1\r\nHost: shop.wafsweep.test\r\nUser-Agent: t/1\r\nAccept: */*\r\nConnection: close\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, conn)
	want := fmt.Sprintf("conn 127.0.0.1 %d 127.0.0.1 %d shop.wafsweep.test", clientPort, p.port)
	eventually(t, "the connection line in Envoy's log", func() bool { return strings.Contains(p.log(t), want) })
}

// The module links libinjection-go v0.3.5: v0.3.3, which Coraza v3.8.1
// pins, has a quadratic SQLi parser (GHSA-974q-67pr-5pc2).
func TestModuleLinksPatchedLibinjection(t *testing.T) {
	info, err := buildinfo.ReadFile(modulePath(t, "CORAZAWAF_MODULE", "libcorazawaf.so"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"github.com/corazawaf/libinjection-go":       "v0.3.5",
		"github.com/corazawaf/coraza/v3":             "v3.8.1",
		"github.com/corazawaf/coraza-coreruleset/v4": "v4.25.0",
	}
	for _, dep := range info.Deps {
		if v, ok := want[dep.Path]; ok {
			got := dep.Version
			if dep.Replace != nil {
				got = dep.Replace.Version
			}
			if got != v {
				t.Errorf("%s is %s, want %s", dep.Path, got, v)
			}
			delete(want, dep.Path)
		}
	}
	for path := range want {
		t.Errorf("%s is not linked into the module", path)
	}
}

package waf

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// sameNamed puts an attack as the last of several values of one name, the
// way Coraza's parsers file such values under one key string (see package
// ownkeys); benign copies come first.
var sameNamed = []struct {
	name string
	make func(attack string) (RequestHead, []byte)
}{
	{"urlencoded body", func(attack string) (RequestHead, []byte) {
		body := "id=7&a=1" + strings.Repeat("&note=hello", 5) + "&note=" + url.QueryEscape(attack)
		return post("/submit", "application/x-www-form-urlencoded", len(body)), []byte(body)
	}},
	{"json body", func(attack string) (RequestHead, []byte) {
		quoted, _ := json.Marshal(attack)
		body := `{"id":7,"a":1` + strings.Repeat(`,"note":"hello"`, 5) + `,"note":` + string(quoted) + "}"
		return post("/api", "application/json", len(body)), []byte(body)
	}},
	{"cookies", func(attack string) (RequestHead, []byte) {
		return withHeader(get("/"), "cookie", "id=7"+strings.Repeat("; note=hello", 5)+"; note="+attack), nil
	}},
	{"headers", func(attack string) (RequestHead, []byte) {
		r := get("/")
		name := "x-note" // one string for all, as an embedder may pass them
		for range 5 {
			r.Headers = append(r.Headers, Header{name, "hello"})
		}
		r.Headers = append(r.Headers, Header{name, attack})
		return r, nil
	}},
	{"query", func(attack string) (RequestHead, []byte) {
		return get("/search?id=7" + strings.Repeat("&note=hello", 5) + "&note=" + url.QueryEscape(attack)), nil
	}},
}

// TestSameNamedValuesAreEachInspected sends each placement many times:
// the attack must be blocked every time with the same matched rules, by
// the stock and the accelerated engine. Before package ownkeys, a Java
// payload in the JSON placement got through in about 40% of requests.
func TestSameNamedValuesAreEachInspected(t *testing.T) {
	const attack, requests = "ProcessBuilder.evil.prototypeclonefactory", 60
	for _, mode := range []string{"off", "prefilter"} {
		e := accelEngine(t, "full-crs", mode, nil)
		for _, p := range sameNamed {
			t.Run(mode+"/"+p.name, func(t *testing.T) {
				req, body := p.make(attack)
				r := corpusRequest{p.name, req, body}
				first := judge(t, e, r, nil)
				if first.blockedBy == 0 {
					t.Fatalf("not blocked: %s", first)
				}
				for i := range requests {
					if v := judge(t, e, r, nil); !v.equal(first) {
						t.Fatalf("request %d came to another verdict: %s; the first %s", i+1, v, first)
					}
				}
			})
		}
	}
}

// Package ownkeys gives every value of a transaction's collections a key
// string of its own, which Coraza's transformation cache needs to be
// sound.
//
// Coraza (v3.8.1) caches a value's transformations per phase under the
// address of its key string and its position in the rule's list of
// values. Collections backed by a Go map list their values in a new order
// on every call, so positions move from rule to rule; that is harmless
// while no two values share a key string, because a stale position then
// never names another value's key. Coraza's own parsers do share them:
// duplicate names in a urlencoded body, duplicate keys in a JSON body,
// duplicate cookie names, every text node of an XML body, a multipart
// part's headers. A rule then reads another value's transformed form
// in place of its own, and an attack sent as the last of several
// same-named values gets past every rule that shares a transformation
// prefix with an earlier one, in a share of requests that depends on the
// map's order (40% for a Java payload after five benign JSON duplicates,
// full CRS). Upstream discusses the cache's keys as a performance bug
// (corazawaf/coraza#1681); until it is keyed by value, the rules that
// Directives returns run first in the request phases and the response
// body phase and copy every shared key.
//
// The rules use an operator that never matches, so they run no actions,
// never appear among a transaction's matched rules and never log.
package ownkeys

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/corazawaf/coraza/v3/collection"
	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"
)

// operatorName is the name the rules call their operator by.
const operatorName = "corazawafOwnKeys"

// firstRuleID is the id of the phase 1 rule; phase n's is firstRuleID+n-1
// (there is none for phase 3), just below the accelerator's range and far
// above CRS's and ModSecurity's.
const firstRuleID = 1_989_999_001

// IsOwnRule reports whether a rule id is one of the rules Directives
// returns.
func IsOwnRule(id int) bool {
	return slices.Contains(ownPhases, id-firstRuleID+1)
}

// ownPhases are the phases with a rule of Directives: none in phase 3
// (response headers come from Envoy with a string per name; Coraza parses
// none).
var ownPhases = []int{1, 2, 4}

var registerOnce sync.Once

// Directives returns the rules, for phases 1, 2 and 4, that must come
// before every other rule of the WAF. It registers their operator with
// Coraza on first use.
func Directives() string {
	registerOnce.Do(func() { plugins.RegisterOperator(operatorName, newOperator) })
	var b strings.Builder
	for _, phase := range ownPhases {
		fmt.Fprintf(&b, "SecRule REQUEST_METHOD \"@%s %d\" \"id:%d,phase:%d,pass,nolog,noauditlog,t:none\"\n",
			operatorName, phase, firstRuleID+phase-1, phase)
	}
	return b.String()
}

// collections are the map-backed collections whose values arrive in a
// phase, at most maxCollections of them.
type collections [maxCollections]collection.Map

const maxCollections = 13

// phaseCollections lists them per phase: those Coraza's parsers fill
// (cookies, query, bodies), and the request headers, which are the
// client's and come from the caller of package waf, who may pass one
// string for a repeated name. Phase 3 has none: response headers are the
// backend's, Coraza parses nothing out of them, and Envoy hands each name
// over as a string of its own.
var phaseCollections = map[int]func(plugintypes.TransactionVariables) collections{
	1: func(v plugintypes.TransactionVariables) collections {
		return collections{v.RequestHeaders(), v.RequestCookies(), v.ArgsGet(), v.ArgsPath()}
	},
	2: func(v plugintypes.TransactionVariables) collections {
		return collections{
			v.ArgsPost(), v.Files(), v.FilesNames(), v.FilesSizes(), v.FilesTmpNames(), v.FilesTmpContent(),
			v.MultipartPartHeaders(), v.MultipartName(), v.MultipartFilename(),
			v.MultipartFilenameCharset(), v.MultipartFilenameLanguage(), v.XML(), v.RequestXML(),
		}
	},
	4: func(v plugintypes.TransactionVariables) collections {
		return collections{v.ResponseArgs(), v.ResponseXML(), v.XML()}
	},
}

func newOperator(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	phase, err := strconv.Atoi(strings.TrimSpace(o.Arguments))
	if err != nil || phaseCollections[phase] == nil {
		return nil, fmt.Errorf("@%s %q: want phase 1, 2 or 4", operatorName, o.Arguments)
	}
	return operator{collections: phaseCollections[phase]}, nil
}

type operator struct {
	collections func(plugintypes.TransactionVariables) collections
}

// Evaluate separates the keys of the phase's collections; it never
// matches.
func (o operator) Evaluate(tx plugintypes.TransactionState, _ string) bool {
	for _, m := range o.collections(tx.Variables()) {
		if m != nil {
			separate(m)
		}
	}
	return false
}

// separate gives every value of m whose key string it shares with another
// value a copy of the key of its own. Values keep their keys' text and,
// under each key, their order.
func separate(m collection.Map) {
	for _, key := range sharedKeys(m.FindAll()) {
		regroup(m, key)
	}
}

// sharedKeys returns one key of each key string that more than one value
// uses (compared by address: equal text in separate strings is fine).
func sharedKeys(values []types.MatchData) []string {
	const quadraticUpTo = 32 // a map costs more than comparing a few headers
	var shared []string
	if len(values) <= quadraticUpTo {
		for i, v := range values {
			p := unsafe.StringData(v.Key())
			if slices.ContainsFunc(values[:i], sameKey(p)) && !slices.ContainsFunc(shared, sameString(p)) {
				shared = append(shared, v.Key())
			}
		}
		return shared
	}
	seen := make(map[*byte]int, len(values))
	for _, v := range values {
		p := unsafe.StringData(v.Key())
		if seen[p]++; seen[p] == 2 {
			shared = append(shared, v.Key())
		}
	}
	return shared
}

func sameKey(p *byte) func(types.MatchData) bool {
	return func(v types.MatchData) bool { return unsafe.StringData(v.Key()) == p }
}

func sameString(p *byte) func(string) bool {
	return func(s string) bool { return unsafe.StringData(s) == p }
}

// regroup re-adds the values under key (every case of it in a
// case-insensitive collection), each with a copy of its own key.
func regroup(m collection.Map, key string) {
	type entry struct{ key, value string }
	var group []entry
	if key == "" { // FindString("") would return the whole collection
		for _, v := range m.Get("") {
			group = append(group, entry{"", v})
		}
	} else {
		for _, v := range m.FindString(key) {
			group = append(group, entry{v.Key(), v.Value()})
		}
	}
	m.Remove(key)
	for _, e := range group {
		m.Add(ownCopy(e.key), e.value)
	}
}

// ownCopy copies s into a string of its own, at an address of its own even
// when s is empty (strings.Clone("") has none, and a concatenation with a
// constant may return the constant).
func ownCopy(s string) string {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return unsafe.String(&b[0], len(s))
}

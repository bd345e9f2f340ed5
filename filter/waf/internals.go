package waf

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/types"

	"github.com/wafsweep/wafsweep/filter/internal/ownkeys"
)

// This file reads what Coraza v3 builds but has no public getter for. Each
// read is a deliberate, tested dependency on Coraza's internal field names
// (engine_test.go, internals_test.go): an upgrade that renames one fails
// with errCorazaChanged at engine build, never silently.

// errCorazaChanged wraps every failed read.
var errCorazaChanged = errors.New("unexpected Coraza internals (Coraza version changed?)")

// corazaWAF is the built WAF's internal struct (corazawaf.WAF).
func corazaWAF(w coraza.WAF) (reflect.Value, error) {
	v := reflect.ValueOf(w)
	if v.Kind() == reflect.Struct {
		v = v.FieldByName("waf")
	}
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return reflect.Value{}, fmt.Errorf("%w: WAF of type %T", errCorazaChanged, w)
	}
	return v.Elem(), nil
}

// field is a struct's field of the given kind, or an error naming it.
func field(v reflect.Value, name string, kind reflect.Kind) (reflect.Value, error) {
	f := v.FieldByName(name)
	if !f.IsValid() || f.Kind() != kind {
		return reflect.Value{}, fmt.Errorf("%w: field %s of %s", errCorazaChanged, name, v.Type())
	}
	return f, nil
}

// fieldIndex is the index of a struct type's field of the given kind, or
// an error naming it: found once, it reads the field of every value.
func fieldIndex(t reflect.Type, name string, kind reflect.Kind) ([]int, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %s is not a struct", errCorazaChanged, t)
	}
	f, ok := t.FieldByName(name)
	if !ok || f.Type.Kind() != kind {
		return nil, fmt.Errorf("%w: field %s of %s", errCorazaChanged, name, t)
	}
	return f.Index, nil
}

// responsePhases is the first response phase (3, response headers).
const responsePhases = types.PhaseResponseHeaders

// hasResponseRules reports whether a rule of the built WAF runs in phase 3,
// 4 or 5, the module's own key rules aside: those are the rules that read
// what the response phases add (phase 5 may read the response's status and
// headers).
func hasResponseRules(w coraza.WAF) (bool, error) {
	rules, err := readRules(w)
	if err != nil {
		return false, err
	}
	for _, r := range rules {
		if r.phase >= responsePhases && !ownkeys.IsOwnRule(r.id) {
			return true, nil
		}
	}
	return false, nil
}

// ruleIDs lists the id of every rule of the built WAF (0 for markers).
func ruleIDs(w coraza.WAF) ([]int, error) {
	rules, err := readRules(w)
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(rules))
	for i, r := range rules {
		ids[i] = r.id
	}
	return ids, nil
}

// ruleInfo is what the module reads of a built rule.
type ruleInfo struct {
	id    int
	phase types.RulePhase
}

// readRules reads the built WAF's final rule list, after removals and
// action updates, which the rule observer of Coraza's config (called as
// each rule is added) would not see.
func readRules(w coraza.WAF) ([]ruleInfo, error) {
	v, err := corazaWAF(w)
	if err != nil {
		return nil, err
	}
	group, err := field(v, "Rules", reflect.Struct)
	if err != nil {
		return nil, err
	}
	rules, err := field(group, "rules", reflect.Slice)
	if err != nil {
		return nil, err
	}
	phase, err := fieldIndex(rules.Type().Elem(), "Phase_", reflect.Int)
	if err != nil {
		return nil, err
	}
	id, err := fieldIndex(rules.Type().Elem(), "ID_", reflect.Int)
	if err != nil {
		return nil, err
	}
	out := make([]ruleInfo, rules.Len())
	for i := range out {
		rule := rules.Index(i)
		out[i] = ruleInfo{id: int(rule.FieldByIndex(id).Int()), phase: types.RulePhase(rule.FieldByIndex(phase).Int())}
	}
	return out, nil
}

// auditProbe reads a transaction's own audit engine setting, which a rule's
// ctl:auditEngine may have changed from the WAF's: an audited transaction's
// record holds the response (status, headers), so its response phases run
// even without rules that read them.
type auditProbe struct {
	txType reflect.Type // *corazawaf.Transaction
	index  []int        // of its AuditEngine field
}

// newAuditProbe finds the field on a transaction of the built WAF.
func newAuditProbe(w coraza.WAF) (auditProbe, error) {
	tx := w.NewTransaction()
	defer tx.Close()
	v := reflect.ValueOf(tx)
	if v.Kind() != reflect.Pointer {
		return auditProbe{}, fmt.Errorf("%w: transaction of type %T", errCorazaChanged, tx)
	}
	index, err := fieldIndex(v.Type().Elem(), "AuditEngine", reflect.Int)
	if err != nil {
		return auditProbe{}, err
	}
	return auditProbe{txType: v.Type(), index: index}, nil
}

// audited reports whether Coraza may write the transaction to its audit
// log; true for a transaction it cannot read.
func (p auditProbe) audited(tx types.Transaction) bool {
	v := reflect.ValueOf(tx)
	if v.Type() != p.txType {
		return true
	}
	return types.AuditEngineStatus(v.Elem().FieldByIndex(p.index).Int()) != types.AuditEngineOff
}

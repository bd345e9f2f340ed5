// Package plugin connects the accelerator to Coraza through its public
// experimental plugin API: three operators that the accelerator's generated
// rules name, registered once per process, two transformations only its
// collectors name (transformations.go), and a compact @pmFromFile for
// accelerated WAFs (pmfromfile.go). The operators never match, so
// the generated rules never run actions, never appear among a
// transaction's matched rules and never log; their only effect is the
// Handler call.
//
// An operator finds its Handler by the token in its argument
// ("@accelCollect a1:3"), which Register hands out before the WAF is built.
package plugin

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
)

// Operator names, as the generated rules spell them (Coraza looks
// operators up by exact name).
const (
	CollectOperator = "accelCollect"
	DecideOperator  = "accelDecide"
	CheckOperator   = "accelCheck"
)

// Handler receives the calls of one accelerated rule set.
type Handler interface {
	// Collect sees one value of collector rule `collector`, after that
	// rule's transformations.
	Collect(tx plugintypes.TransactionState, collector int, value string)
	// Decide runs once per transaction and phase, after that phase's
	// collector rules.
	Decide(tx plugintypes.TransactionState, phase int)
	// Check runs once per transaction at the start of the logging phase.
	Check(tx plugintypes.TransactionState)
}

var (
	registerOnce sync.Once
	mu           sync.Mutex
	handlers     = map[string]Handler{}
	lastToken    int
)

// Register makes h reachable from the operators under the returned token
// until release is called. Operators look their handler up while Coraza
// builds the WAF and keep it, so release may follow the build.
func Register(h Handler) (token string, release func()) {
	registerOnce.Do(registerOperators)
	mu.Lock()
	defer mu.Unlock()
	lastToken++
	token = "a" + strconv.Itoa(lastToken)
	handlers[token] = h
	return token, func() {
		mu.Lock()
		defer mu.Unlock()
		delete(handlers, token)
	}
}

func registerOperators() {
	registerPhraseOperators()
	registerTransformations()
	plugins.RegisterOperator(CollectOperator, func(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
		token, index, ok := strings.Cut(strings.TrimSpace(o.Arguments), ":")
		n, err := strconv.Atoi(index)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("@%s %q: want TOKEN:COLLECTOR", CollectOperator, o.Arguments)
		}
		h, err := lookup(token)
		if err != nil {
			return nil, err
		}
		return collect{h: h, index: n}, nil
	})
	plugins.RegisterOperator(DecideOperator, func(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
		token, phase, ok := strings.Cut(strings.TrimSpace(o.Arguments), ":")
		n, err := strconv.Atoi(phase)
		if !ok || err != nil || n < 1 || n > 2 {
			return nil, fmt.Errorf("@%s %q: want TOKEN:PHASE (1 or 2)", DecideOperator, o.Arguments)
		}
		h, err := lookup(token)
		return decide{h: h, phase: n}, err
	})
	plugins.RegisterOperator(CheckOperator, func(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
		h, err := lookup(strings.TrimSpace(o.Arguments))
		return check{h}, err
	})
}

func lookup(token string) (Handler, error) {
	mu.Lock()
	defer mu.Unlock()
	h, ok := handlers[token]
	if !ok {
		return nil, fmt.Errorf("accelerator %q is not registered: the accelerator's rules only work in the WAF it generated them for", token)
	}
	return h, nil
}

type collect struct {
	h     Handler
	index int
}

func (c collect) Evaluate(tx plugintypes.TransactionState, value string) bool {
	c.h.Collect(tx, c.index, value)
	return false
}

type decide struct {
	h     Handler
	phase int
}

func (d decide) Evaluate(tx plugintypes.TransactionState, _ string) bool {
	d.h.Decide(tx, d.phase)
	return false
}

type check struct{ h Handler }

func (c check) Evaluate(tx plugintypes.TransactionState, _ string) bool {
	c.h.Check(tx)
	return false
}

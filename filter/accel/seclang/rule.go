package seclang

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Rule is a SecRule, SecAction or SecMarker as the accelerator sees it.
type Rule struct {
	// ID is 0 for SecMarker and for chain members.
	ID int
	// Phase is the rule's phase; 2 when none is given, 0 for SecMarker
	// (markers are evaluated in every phase and count against skip).
	Phase int
	// Marker is the SecMarker name.
	Marker string
	// Targets is the variable list as written ("ARGS|!ARGS:id").
	Targets string
	// Variables is Targets taken apart.
	Variables []Variable
	// Operator is nil for SecAction and SecMarker.
	Operator *Operator
	// Actions in the order written (SecDefaultAction's are not merged in).
	Actions []Action
	// Transformations in effect: the t: actions after the last t:none, or
	// all of them when there is no t:none (HasTNone tells which).
	Transformations []string
	HasTNone        bool
	MultiMatch      bool
	// Skip is the skip:N count (0 when absent).
	Skip int
	// Tags and Msg as written, for SecRuleRemoveByTag/Msg and paranoia.
	Tags []string
	Msg  string
	// Chain holds the chained rules that follow this one, in order.
	Chain []*Rule
	// Directive says where the rule was read.
	Directive Directive
}

// Variable is one entry of a rule's target list.
type Variable struct {
	Name    string // upper case, e.g. "REQUEST_HEADERS"
	Key     string // selector as written, "" when none ("/re/" for a regex)
	Negated bool   // !NAME:key
	Count   bool   // &NAME
}

// Operator is a rule's operator.
type Operator struct {
	Name     string // without "@" and "!", e.g. "rx"
	Negated  bool
	Argument string
}

// Action is one rule action; Value has its quotes removed.
type Action struct {
	Name, Value string
}

// ParseSecRule parses the arguments of a SecRule directive:
// VARIABLES "OPERATOR" ["ACTIONS"], split as Coraza splits them.
func ParseSecRule(d Directive) (*Rule, error) {
	data := strings.Trim(d.Args, " ")
	vars, rest, ok := strings.Cut(data, " ")
	if !ok {
		return nil, fmt.Errorf("%w: rule without operator: %q", errSyntax, data)
	}
	rest = strings.TrimLeft(rest, " ")
	op, rest, err := cutQuoted(rest)
	if err != nil {
		return nil, err
	}
	op = unescapeQuotes(maybeRemoveQuotes(op))
	rest = strings.TrimLeft(rest, " ")
	actions := ""
	if rest != "" {
		if len(rest) < 2 || rest[0] != '"' || rest[len(rest)-1] != '"' {
			return nil, fmt.Errorf("%w: actions not quoted: %q", errSyntax, rest)
		}
		actions = maybeRemoveQuotes(rest)
	}
	r := &Rule{Targets: vars, Directive: d, Phase: 2}
	if r.Variables, err = ParseVariables(vars); err != nil {
		return nil, err
	}
	r.Operator = parseOperator(op)
	if err := r.applyActions(actions); err != nil {
		return nil, err
	}
	return r, nil
}

// ParseSecAction parses the arguments of a SecAction directive.
func ParseSecAction(d Directive) (*Rule, error) {
	r := &Rule{Directive: d, Phase: 2}
	if err := r.applyActions(maybeRemoveQuotes(d.Args)); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Rule) applyActions(actions string) error {
	var err error
	if r.Actions, err = ParseActions(actions); err != nil {
		return err
	}
	for _, a := range r.Actions {
		switch a.Name {
		case "id":
			if r.ID, err = strconv.Atoi(a.Value); err != nil {
				return fmt.Errorf("%w: id %q", errSyntax, a.Value)
			}
		case "phase":
			if r.Phase, err = parsePhase(a.Value); err != nil {
				return err
			}
		case "t":
			// Coraza clears only on exactly "none"; names keep their
			// spelling, which is part of Coraza's transformation cache key.
			if a.Value == "none" {
				r.Transformations, r.HasTNone = nil, true
			} else {
				r.Transformations = append(r.Transformations, a.Value)
			}
		case "multimatch":
			r.MultiMatch = true
		case "skip":
			if r.Skip, err = strconv.Atoi(a.Value); err != nil {
				return fmt.Errorf("%w: skip %q", errSyntax, a.Value)
			}
		case "tag":
			r.Tags = append(r.Tags, a.Value)
		case "msg":
			r.Msg = a.Value
		}
	}
	return nil
}

// HasAction reports whether the rule carries an action of that name.
func (r *Rule) HasAction(name string) bool { return hasAction(r.Actions, name) }

func hasAction(actions []Action, name string) bool {
	return slices.ContainsFunc(actions, func(a Action) bool { return a.Name == name })
}

// WithChain is the rule followed by the rules chained to it.
func (r *Rule) WithChain() []*Rule { return append([]*Rule{r}, r.Chain...) }

// Chained reports whether the rule asks for a chained rule to follow.
func (r *Rule) Chained() bool { return r.HasAction("chain") }

// parsePhase accepts what Coraza's types.ParseRulePhase accepts.
func parsePhase(v string) (int, error) {
	switch v {
	case "request":
		return 2, nil
	case "response":
		return 4, nil
	case "logging":
		return 5, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= 5 {
		return n, nil
	}
	return 0, fmt.Errorf("%w: phase %q", errSyntax, v)
}

// parseOperator follows Coraza: no "@" means @rx, "!" negates.
func parseOperator(op string) *Operator {
	switch {
	case op == "" || op[0] != '@' && op[0] != '!':
		op = "@rx " + op
	case op == "!":
		op = "!@rx"
	case len(op) > 1 && op[0] == '!' && op[1] != '@':
		op = "!@rx " + op[1:]
	}
	name, arg, _ := strings.Cut(op, " ")
	name = strings.TrimSpace(name)
	o := &Operator{Argument: strings.TrimSpace(arg)}
	switch {
	case strings.HasPrefix(name, "!@"):
		o.Negated, name = true, name[2:]
	case strings.HasPrefix(name, "@"):
		name = name[1:]
	}
	o.Name = strings.ToLower(name)
	return o
}

// ParseActions splits an action list as Coraza does: commas outside single
// quotes separate actions, the first colon separates name from value, a
// backslash protects the next character.
func ParseActions(actions string) ([]Action, error) {
	var out []Action
	beforeKey, afterKey := -1, -1
	inQuotes := false
	appendAction := func(end int) {
		var key, val string
		if afterKey == -1 {
			key = actions[beforeKey+1 : end]
		} else {
			key = actions[beforeKey+1 : afterKey]
			val = actions[afterKey+1 : end]
		}
		key = strings.ToLower(strings.TrimSpace(key))
		if key == "" {
			return
		}
		out = append(out, Action{Name: key, Value: maybeRemoveQuotes(strings.TrimSpace(val))})
	}
	for i := 1; i < len(actions); i++ {
		c := actions[i]
		if actions[i-1] == '\\' {
			continue
		}
		if c == '\'' {
			inQuotes = !inQuotes
			continue
		}
		if inQuotes {
			continue
		}
		switch c {
		case ':':
			if afterKey == -1 {
				afterKey = i
			}
		case ',':
			appendAction(i)
			beforeKey, afterKey = i, -1
		}
	}
	if len(actions) > 0 {
		appendAction(len(actions))
	}
	return out, nil
}

// ParseVariables takes a target list apart, following Coraza's parser:
// "|" separates entries except inside /regex/ keys, "'" quotes a key.
func ParseVariables(vars string) ([]Variable, error) {
	const (
		inName = iota
		inKey
		inRegex
		inXPath
	)
	var out []Variable
	state := inName
	var name, key []byte
	negated, count, escaped, quoted := false, false, false, false
	for i := 0; i < len(vars); i++ {
		c := vars[i]
		if (c == '|' && state != inRegex) || i+1 >= len(vars) || (state == inRegex && c == '/' && !escaped) {
			if c != '|' {
				if state == inName {
					name = append(name, c)
				} else if state != inRegex && c != '/' {
					key = append(key, c)
				}
			}
			if quoted {
				i += 2
				quoted = false
			} else if state == inRegex {
				i++
			}
			k := string(key)
			if state == inRegex {
				k = "/" + k + "/"
			}
			if len(name) == 0 {
				return nil, fmt.Errorf("%w: empty variable in %q", errSyntax, vars)
			}
			out = append(out, Variable{Name: strings.ToUpper(string(name)), Key: k, Negated: negated, Count: count})
			name, key = nil, nil
			negated, count, state = false, false, inName
			continue
		}
		switch state {
		case inName:
			switch c {
			case '!':
				negated = true
			case '&':
				count = true
			case ':':
				state = inKey
			default:
				name = append(name, c)
			}
		case inKey:
			switch {
			case len(key) == 0 && (string(name) == "XML" || string(name) == "JSON"):
				state = inXPath
				key = append(key, c)
			case c == '/':
				state = inRegex
			case c == '\'':
				quoted = true
			default:
				key = append(key, c)
			}
		case inRegex:
			switch {
			case c == '/' && !escaped:
				state = inKey
			case c == '\\':
				key = append(key, '\\')
				escaped = !escaped
			default:
				key = append(key, c)
				escaped = false
			}
		case inXPath:
			key = append(key, c)
		}
	}
	return out, nil
}

// cutQuoted splits off a leading double-quoted string; a quote preceded
// by an odd number of backslashes does not end it.
func cutQuoted(s string) (quoted, rest string, err error) {
	if s == "" || s[0] != '"' {
		return "", "", fmt.Errorf("%w: expected a quoted operator: %q", errSyntax, s)
	}
	backslashes := 0
	for i := 1; i < len(s); i++ {
		if s[i] != '"' {
			if s[i] == '\\' {
				backslashes++
			} else {
				backslashes = 0
			}
			continue
		}
		if backslashes%2 == 1 {
			backslashes = 0
			continue
		}
		return s[:i+1], s[i+1:], nil
	}
	return "", "", fmt.Errorf("%w: unterminated quote: %q", errSyntax, s)
}

func maybeRemoveQuotes(s string) string {
	if len(s) < 2 {
		return s
	}
	if (s[0] == '"' && s[len(s)-1] == '"') || (s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// unescapeQuotes turns \" into ", as Coraza does for operator arguments.
func unescapeQuotes(s string) string {
	if !strings.Contains(s, `\"`) {
		return s
	}
	return strings.ReplaceAll(s, `\"`, `"`)
}

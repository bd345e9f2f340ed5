package ruleplan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// txValue is what the analysis knows of one TX variable at a point of
// the walk. The zero value is "unknown".
type txValue struct {
	known bool
	set   bool
	value string
	phase int // of the write that made it known
}

// txState holds, by lower-case TX key, what every transaction holds
// there. A key that is absent has never been written, and is known to be
// unset unless a setvar whose key is built at run time could have named it.
type txState struct {
	keys map[string]txValue
	// dynamic are the keys of such setvars, cut at each macro.
	dynamic [][]string
}

func newTxState() *txState { return &txState{keys: map[string]txValue{}} }

func (s *txState) get(key string) txValue {
	key = strings.ToLower(key)
	if v, ok := s.keys[key]; ok {
		return v
	}
	if slices.ContainsFunc(s.dynamic, func(parts []string) bool { return matchesParts(key, parts) }) {
		return txValue{}
	}
	return txValue{known: true}
}

// matchesParts reports whether key could be the expansion of a macro
// text cut into parts at each macro: the parts in order, anything between.
func matchesParts(key string, parts []string) bool {
	if !strings.HasPrefix(key, parts[0]) {
		return false
	}
	key = key[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(key, p)
		}
		at := strings.Index(key, p)
		if at == -1 {
			return false
		}
		key = key[at+len(p):]
	}
	return true
}

// macroParts cuts a macro text at each %{...}.
func macroParts(text string) []string {
	var parts []string
	for {
		start := strings.Index(text, "%{")
		if start == -1 {
			return append(parts, text)
		}
		parts = append(parts, text[:start])
		end := strings.IndexByte(text[start:], '}')
		if end == -1 {
			return append(parts, "")
		}
		text = text[start+end+1:]
	}
}

// values returns what a rule's targets hand its operator, when they are
// all known TX variables with a literal key.
func (s *txState) values(vars []seclang.Variable) ([]string, bool) {
	var out []string
	for _, v := range vars {
		if v.Name != "TX" || v.Negated || v.Key == "" || strings.ContainsAny(v.Key, `/'"%`) {
			return nil, false
		}
		x := s.get(v.Key)
		switch {
		case !x.known:
			return nil, false
		case v.Count && x.set:
			out = append(out, "1")
		case v.Count:
			out = append(out, "0")
		case x.set:
			out = append(out, x.value)
		}
	}
	return out, true
}

// expand resolves a macro text whose %{TX.key} references are all known
// and set; any other macro makes it unknown.
func (s *txState) expand(text string) (string, bool) {
	var b strings.Builder
	for {
		start := strings.Index(text, "%{")
		if start == -1 {
			b.WriteString(text)
			return b.String(), true
		}
		end := strings.IndexByte(text[start:], '}')
		if end == -1 {
			return "", false
		}
		col, key, ok := strings.Cut(text[start+2:start+end], ".")
		if !ok || !strings.EqualFold(col, "tx") {
			return "", false
		}
		x := s.get(key)
		if !x.known || !x.set {
			return "", false
		}
		b.WriteString(text[:start])
		b.WriteString(x.value)
		text = text[start+end+1:]
	}
}

// setvarKey splits a setvar argument as Coraza's setvar does. It reports
// false when the key is built at run time or names no TX variable.
func setvarKey(arg string) (key, value string, hasValue, remove, ok bool) {
	arg, remove = strings.CutPrefix(arg, "!")
	target, value, hasValue := strings.Cut(arg, "=")
	col, key, _ := strings.Cut(target, ".")
	if !strings.EqualFold(col, "tx") || strings.Contains(key, "%{") {
		return strings.ToLower(key), "", false, false, false
	}
	return strings.ToLower(key), value, hasValue, remove, true
}

// set applies a setvar that runs in every transaction reaching it, as
// Coraza's setvar does. It reports false when the key is built at run time.
func (s *txState) set(arg string, phase int) bool {
	key, value, hasValue, remove, ok := setvarKey(arg)
	if !ok {
		return false
	}
	if remove {
		s.keys[key] = txValue{known: true, phase: phase}
		return true
	}
	if hasValue {
		if value, ok = s.expand(value); !ok {
			s.keys[key] = txValue{}
			return true
		}
	}
	if value == "" || (value[0] != '+' && value[0] != '-') {
		s.keys[key] = txValue{known: true, set: true, value: value, phase: phase}
		return true
	}
	s.keys[key] = s.arithmetic(key, value, phase)
	return true
}

// arithmetic is setvar's "=+N" and "=-N".
func (s *txState) arithmetic(key, value string, phase int) txValue {
	current := s.get(key)
	if !current.known {
		return txValue{}
	}
	n := 0
	if len(value) > 1 {
		var err error
		if n, err = strconv.Atoi(value[1:]); err != nil {
			if strings.HasPrefix(value[1:], "tx.") {
				return current // Coraza logs an error and leaves it
			}
			return txValue{known: true, set: true, value: value, phase: phase}
		}
	}
	have := 0
	if current.set && current.value != "" {
		var err error
		if have, err = strconv.Atoi(current.value); err != nil {
			return current // Coraza logs an error and leaves it
		}
	}
	if value[0] == '-' {
		n = -n
	}
	return txValue{known: true, set: true, value: strconv.Itoa(have + n), phase: phase}
}

// forget makes unknown the keys a setvar may write: its key, or every key
// its macro text could expand to.
func (s *txState) forget(arg string) {
	key, _, _, _, ok := setvarKey(arg)
	switch {
	case ok:
		s.keys[key] = txValue{}
	case strings.Contains(key, "%{"):
		parts := macroParts(key)
		s.dynamic = append(s.dynamic, parts)
		for k := range s.keys {
			if matchesParts(k, parts) {
				s.keys[k] = txValue{}
			}
		}
	}
}

// forgetCaptures makes TX:0 to TX:9 unknown, as a capturing rule may set them.
func (s *txState) forgetCaptures() {
	for i := range 10 {
		s.keys[strconv.Itoa(i)] = txValue{}
	}
}

// forgetPhase makes unknown what phase wrote: a later phase cannot count
// on it having run.
func (s *txState) forgetPhase(phase int) {
	for k, v := range s.keys {
		if v.known && v.phase == phase {
			s.keys[k] = txValue{}
		}
	}
}

// remover is what one ctl:ruleRemove* action (rules or their targets) can
// reach: by id range, tag or message.
type remover struct {
	lo, hi   int
	tag, msg string
	all      bool
	// targetsOnly: the rule stays, with fewer values for its operator.
	targetsOnly bool
}

func (w *walker) addRemover(ctl string) {
	name, value, _ := strings.Cut(ctl, "=")
	what, _, _ := strings.Cut(value, ";")
	name = strings.ToLower(name)
	rm := remover{lo: 1, hi: 0, targetsOnly: strings.HasPrefix(name, "ruleremovetarget")}
	switch name {
	case "ruleremovebyid", "ruleremovetargetbyid":
		lo, hi, isRange := strings.Cut(what, "-")
		var errLo, errHi error
		rm.lo, errLo = strconv.Atoi(lo)
		rm.hi, errHi = rm.lo, nil
		if isRange {
			rm.hi, errHi = strconv.Atoi(hi)
		}
		rm.all = errLo != nil || errHi != nil
	case "ruleremovebytag", "ruleremovetargetbytag":
		rm.tag = what
	case "ruleremovebymsg", "ruleremovetargetbymsg":
		rm.msg = what
	default:
		return
	}
	w.removers = append(w.removers, rm)
}

// removersOf returns the ctl actions seen so far that could remove r or
// its targets.
func (w *walker) removersOf(r *seclang.Rule) []remover {
	var out []remover
	for _, rm := range w.removers {
		if rm.reaches(r) {
			out = append(out, rm)
		}
	}
	return out
}

func (rm remover) reaches(r *seclang.Rule) bool {
	return rm.all || (r.ID >= rm.lo && r.ID <= rm.hi) || (rm.tag != "" && slices.Contains(r.Tags, rm.tag)) || (rm.msg != "" && r.Msg == rm.msg)
}

// keepsRule reports whether the ctl removes targets, not the rule: the
// rule then runs and may decide otherwise.
func (rm remover) keepsRule() bool { return rm.targetsOnly }

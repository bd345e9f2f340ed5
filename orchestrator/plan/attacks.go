package plan

import (
	"fmt"
	"math"
)

// MaxAttackSharePct bounds AttackSharePct: above it the "attacks" are the
// traffic and the benign requests the share, which is another question
// than the cost of a WAF in front of a service.
const MaxAttackSharePct = 50

// AttackRate is the part of a step at rate RPS sent as attacks.
func (p Plan) AttackRate(rate int) float64 { return float64(rate) * p.AttackSharePct / 100 }

func (p Plan) checkAttackShare() []error {
	if s := p.AttackSharePct; math.IsNaN(s) || s < 0 || s > MaxAttackSharePct {
		return []error{fmt.Errorf("attack share %g%% is out of range: use 0 (none) to %d%%", s, MaxAttackSharePct)}
	}
	return nil
}

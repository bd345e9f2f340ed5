package report

import "github.com/wafsweep/wafsweep/orchestrator/dataset"

// kneeSteps are a configuration's runs at its knee: in each round with a
// knee, the last passing capacity step at that round's knee rate.
func kneeSteps(steps []dataset.StepRow, knees []dataset.KneeRow, configID string) []dataset.StepRow {
	var out []dataset.StepRow
	for _, k := range knees {
		if k.ConfigID != configID || k.Round == dataset.AllRounds || k.Invalid || k.KneeRPS <= 0 {
			continue
		}
		found, last := false, dataset.StepRow{}
		for _, s := range steps {
			if s.ConfigID == configID && s.Round == k.Round && s.IsCapacity() && s.TargetRPS == k.KneeRPS && s.Verdict == dataset.VerdictPass {
				found, last = true, s
			}
		}
		if found {
			out = append(out, last)
		}
	}
	return out
}

package fortio

import (
	"encoding/json"
	"fmt"

	"fortio.org/fortio/fhttp"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
)

// ToResult turns a Fortio result JSON into the sweep's result, counted as
// package loadgen counts an in-process run. LoadgenCPUSeconds is left 0.
func ToResult(spec loadgen.Spec, raw []byte) (loadgen.Result, error) {
	var res fhttp.HTTPRunnerResults
	if err := json.Unmarshal(raw, &res); err != nil {
		return loadgen.Result{}, fmt.Errorf("fortio: decoding the result: %w", err)
	}
	return loadgen.ResultFromFortio(spec, &res)
}

package fortio

import (
	"encoding/json"
	"fmt"
	"maps"

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
	stripped, err := withoutPayload(raw)
	if err != nil {
		return loadgen.Result{}, err
	}
	r := loadgen.Result{
		TargetQPS:     spec.QPS,
		ActualQPS:     res.ActualQPS,
		Duration:      res.ActualDuration,
		Scheduled:     loadgen.ScheduledCalls(spec.QPS, spec.Duration, spec.Connections),
		SocketsOpened: res.SocketCount,
		Codes:         maps.Clone(res.RetCodes),
		RawJSON:       stripped,
	}
	if h := res.DurationHistogram; h != nil {
		r.Completed = h.Count
		r.MaxMs = h.Max * 1000
		for _, p := range h.Percentiles {
			ms := p.Value * 1000
			switch p.Percentile {
			case 50:
				r.P50Ms = ms
			case 90:
				r.P90Ms = ms
			case 99:
				r.P99Ms = ms
			case 99.9:
				r.P999Ms = ms
			}
		}
	}
	for code, n := range r.Codes {
		switch {
		case code == fhttp.SocketError:
			r.SocketErrors += n
		case code < 200 || code > 299:
			r.Non2xx += n
		}
	}
	return r, nil
}

// withoutPayload drops the request body Fortio stores base64 in its result.
func withoutPayload(raw []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("fortio: decoding the result: %w", err)
	}
	delete(fields, "Payload")
	return json.Marshal(fields)
}

// Package remoteload runs package loadgen's steps in another process: the
// load generator pod of the Kubernetes targets. The pod serves Handler on
// its loopback; the orchestrator reaches it through a port-forward with
// Client. A step is the same loadgen.RunAll as on the local target, so it is
// measured the same way: counts inside the window call by call, latency
// corrected for coordinated omission, the load generator's lateness and
// run delay. The window's edges are streamed to the client as they happen,
// so the orchestrator samples the proxy at the same instants (late by the
// port-forward's latency, a few milliseconds against windows of seconds).
//
// The wire format is a stream of gob messages on one HTTP response: gob
// carries loadgen's types as they are (NaN latencies of empty samples
// included, which JSON cannot), and a message is flushed the moment its
// edge is reached.
package remoteload

import (
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
)

// RunPath is where Handler takes a step: POST, a gob-encoded step.
const RunPath = "/run"

// step is what the client sends: the runs sent together (loadgen.RunAll: a
// plain shape is one, a mixed shape's members or attacks beside the load
// are more), without their OnEdge, and the content of every CA file they
// name, by the name: the pod cannot read the orchestrator's files, so the
// handler writes each into a file of its own for the step.
type step struct {
	Runs []loadgen.Spec
	CAs  map[string][]byte
}

// HealthPath answers 200 once the handler serves.
const HealthPath = "/healthz"

// message is one element of the response stream: an edge of the window,
// then the result (the union, and each run's own) or the error that ended
// the step. Kind says which, since
// gob does not send zero values (WindowStart is 0). At is when the pod's
// load generator marked the edge, on the pod's clock: the caller compares
// the two edges' delays, in which a constant offset between clocks cancels.
type message struct {
	Kind   kind
	Edge   loadgen.Edge
	At     time.Time
	Result *loadgen.Result
	Each   []loadgen.Result
	Err    string
}

type kind int

const (
	kindEdge kind = iota + 1
	kindResult
	kindError
)

// Package knee finds the knee point of one configuration: the highest
// constant target throughput it sustains.
//
// A step offers a target rate R over c keep-alive connections: a warm-up,
// then a measured window of length T, in one run (see package loadgen).
// Counting the calls by their intended send time,
//
//	intended   = the calls intended inside the window (about R * T)
//	completion = those of them answered during the run, however late / intended
//	error      = (non-2xx + socket errors) / responses in the window   (1 when none)
//	sustained  = p50 of the last fifth's calls <= 2 * p50 of the first fifth's + 5 ms
//	             and <= 2 * the window's p50 raw latency + 5 ms
//
// A step passes iff completion >= 0.99, error <= 0.001 and it was
// sustained. A backlog of calls intended before the window is never
// credited to it; latency is timed from each call's intended send
// (corrected for coordinated omission), so a queue that grows through the
// window, or that the run's tail drains after it (the last fifth's calls
// waited far longer than the proxy took to answer them), fails the step
// although the run answered its calls. (Steps measured before intended
// calls were counted are judged on responses in the window / R * T,
// without the latency checks.) A step is invalid, neither pass nor fail,
// when the measurement itself cannot be trusted (load generator over its
// CPU budget or waiting for a CPU, proxy restarted or using more CPU than
// it has, its request count disagreeing with the load generator's where
// that could change the verdict, backend saturated, pre-check failed).
//
// The search walks the ladder upwards and stops at the first failing rate.
// It then bisects between the highest pass and the lowest fail (midpoints
// rounded to multiples of 50 RPS) until the gap is at most
// max(MinGap, GapFraction * highest pass), 250 RPS and 5% by default. With
// Confirm, the highest pass is re-run: a pass makes it the knee, a failure
// makes it the new lowest fail and the search goes on below it. The knee is
// therefore the highest passing rate whose next tested higher rate failed.
//
// Passing the top of the ladder is censored above (knee >= top, no confirm
// run); failing the bottom, or failing the confirmation of the bottom, is
// censored below (knee < bottom, reported as 0; see the extension below). An invalid step is retried at
// the same rate up to MaxInvalidRetries times; if it stays invalid the search
// ends as invalid with the reasons.
//
// # Extension: descent below the ladder
//
// The definition above is the notes' and is what the search does with
// Options.Floor = 0. A configuration that fails the bottom of the ladder is
// then only known to be "< bottom", which says nothing about its capacity
// (a full CRS on a small machine may sustain 100 RPS per core). With
// Floor > 0 (below the ladder's first rate) the search extends the ladder
// downwards instead of stopping:
//
//   - When the lowest rate tried so far fails and nothing below it passed
//     (the bottom of the ladder, or the confirmation of the lowest pass), the
//     rate is halved, rounded down to a multiple of 10 RPS but never below
//     Floor, and run as a "descend" step; the last try is exactly Floor.
//     With bottom 1000 and Floor 50: 500, 250, 120, 60, 50.
//   - The first passing descend step is the highest pass; the search bisects
//     between it and the lowest fail and confirms exactly as on the ladder
//     (a failed confirmation with no pass below resumes the descent).
//   - If Floor itself fails the result is censored below with Bound = Floor
//     ("< 50"), where without the descent it is "< bottom".
//
// Two rules of the bisection are scaled so that they stay meaningful below
// the ladder. The gap tolerance is
//
//	max(MinGap * scale, GapFraction * highest pass),  scale = min(1, highest pass / bottom)
//
// so the 250 RPS absolute floor of the gap shrinks in proportion (25 RPS for
// a highest pass at a tenth of the bottom); and midpoints are rounded to
// multiples of 50 RPS only while the rates are at or above the bottom of the
// ladder, below it to multiples of 10 RPS. On the ladder scale is 1 and the
// rounding is 50, so both rules reduce to the notes' definition. Invalid
// steps are retried in the descent as anywhere else (a retried descend step
// is labelled "retry" and keeps descending on failure).
//
// Result.Bound gives the censoring bound in both directions: the top of the
// ladder when censored above (knee >= Bound), the lowest rate tried when
// censored below (knee < Bound).
//
// The search is a deterministic state machine: given the same ladder, options
// and recorded steps it asks for the same rates, which is what Replay uses to
// resume an interrupted sweep from its journal.
//
// The highest rate within a latency objective is a search of its own (see
// KindSLO and dataset.SLOSearches), not a figure read off this search.
package knee

package abi

import (
	"fmt"
	"runtime/debug"

	"github.com/wafsweep/wafsweep/filter/waf"
)

// onPanic is the panic barrier's answer, called from the deferred recover
// of every stream hook. It logs the panic once with its stack, counts it,
// and returns the hook status for the configured failure mode: closed sends
// the failure reply (if nothing was sent yet) and stops the stream, open lets
// it continue uninspected. f is nil when the panic came before the stream's
// object was found.
func onPanic[T any](f *httpFilter, s stream, hook string, recovered any, closed, open T) T {
	if f == nil {
		logPanic(hook, recovered)
		s.sendReply(&waf.LocalReply{Status: 500, Details: "corazawaf_panic"})
		return closed
	}
	failure := f.life.Fail()
	if !failure.First {
		return closedOrOpen(f, closed, open)
	}
	logPanic(hook, recovered)
	if failure.Counted && f.config != nil && f.config.metrics != nil {
		f.config.metrics.countError(s, "panic", 1)
	}
	if failOpen(f) {
		return open
	}
	if failure.ReplyOwed {
		reply := &waf.LocalReply{Status: failureStatus(f)}
		if f.stream != nil {
			reply = f.stream.FailureReply() // in gRPC form for a gRPC request
		}
		reply.Details = "corazawaf_panic"
		s.sendReply(reply)
	}
	return closed
}

func logPanic(hook string, recovered any) {
	envoyLogger{}.Log(waf.LevelError, fmt.Sprintf("[corazawaf] panic in %s hook, stream answered by the failure mode: %v\n%s",
		hook, recovered, debug.Stack()))
}

// endTransaction ends the stream's transaction away from stream_complete
// (Envoy's destroy hook, an inspection thread): the logging phase and Close
// for a sound stream, Close alone after a panic (broken), and Close alone
// if the logging phase itself panics. Whatever happens, the transaction is
// closed: an open one keeps its spilled body files in TMPDIR.
func (f *httpFilter) endTransaction(broken bool) {
	if broken {
		f.release()
		return
	}
	defer func() {
		if r := recover(); r != nil {
			logError("panic while ending a transaction, closed without its logging phase: %v\n%s", r, debug.Stack())
			f.release()
		}
	}()
	f.stream.Complete()
}

// release closes the transaction without the logging phase (waf.Stream.
// Release). It runs on the panic paths, so it guards itself: a second
// panic must not escape the hook.
func (f *httpFilter) release() {
	if f == nil || f.stream == nil {
		return
	}
	defer recoverQuietly("closing a transaction")
	if err := f.stream.Release(); err != nil {
		logError("%v", err)
	}
}

func closedOrOpen[T any](f *httpFilter, closed, open T) T {
	if failOpen(f) {
		return open
	}
	return closed
}

func failOpen(f *httpFilter) bool {
	return f.config != nil && f.config.settings.FailureMode == waf.FailOpen
}

func failureStatus(f *httpFilter) int {
	if f.config == nil {
		return 500
	}
	return f.config.settings.FailureStatus
}

// Command lib is built with -buildmode=c-shared for BenchmarkCallbackWakeups:
// a library whose one export does what a module hook does around its work
// (workerp.Keep, then a small allocation), with the Go runtime sized by
// workerp.ProcsFor as the module sizes it.
package main

import "C"

import (
	"runtime"

	"github.com/wafsweep/wafsweep/filter/internal/workerp"
)

var sink []byte

// init sizes the runtime for the host's one calling thread.
func init() { runtime.GOMAXPROCS(workerp.ProcsFor(1, 0)) }

//export wakebench_hook
func wakebench_hook() {
	workerp.Keep()
	sink = make([]byte, 64)
}

func main() {}

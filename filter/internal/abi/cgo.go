package abi

/*
#cgo LDFLAGS: -Wl,--unresolved-symbols=ignore-all
#include "glue.h"
*/
import "C"

import (
	"unsafe"
)

// moduleBuffer describes Go bytes to Envoy for the duration of one call.
// The bytes hold no Go pointers, which is what cgo's rules require.
func moduleBuffer(s string) C.envoy_dynamic_module_type_module_buffer {
	return C.envoy_dynamic_module_type_module_buffer{ptr: (*C.char)(unsafe.Pointer(unsafe.StringData(s))), length: C.size_t(len(s))}
}

// envoyString copies an Envoy-owned buffer into a Go string: Coraza keeps
// what it is given beyond the hook, Envoy's memory does not live that long.
func envoyString(ptr *C.char, length C.size_t) string {
	if ptr == nil || length == 0 {
		return ""
	}
	return C.GoStringN(ptr, C.int(length))
}

// envoyBytes views an Envoy-owned buffer without copying; valid only during
// the current hook.
func envoyBytes(b C.envoy_dynamic_module_type_envoy_buffer) []byte {
	if b.ptr == nil || b.length == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(b.ptr)), int(b.length))
}

// cstr points C at a Go string's bytes for the duration of one call. The
// bytes are not NUL-terminated: every ABI call takes an explicit length.
func cstr(s string) *C.char {
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s)))
}

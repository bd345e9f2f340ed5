//go:build corazawaf_accelerated

package waf

// defaultAcceleration is the acceleration a configuration gets when it
// names none: the accelerated build (libcorazawaf-accelerated.so)
// accelerates unless told otherwise.
const defaultAcceleration = "prefilter"

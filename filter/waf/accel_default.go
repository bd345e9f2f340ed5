//go:build !corazawaf_accelerated

package waf

// defaultAcceleration is the acceleration a configuration gets when it
// names none: off in the stock build.
const defaultAcceleration = "off"

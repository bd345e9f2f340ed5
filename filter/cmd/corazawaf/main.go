// Command corazawaf is built with -buildmode=c-shared into libcorazawaf.so,
// the Envoy dynamic module. All of its behaviour lives in the packages it
// links: filter/internal/abi (the hooks Envoy calls) and filter/waf.
package main

import _ "github.com/wafsweep/wafsweep/filter/internal/abi"

// main is required by -buildmode=c-shared and never runs.
func main() {}

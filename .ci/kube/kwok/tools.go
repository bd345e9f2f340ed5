//go:build tools

// Package tools pins the kwok command the tests run.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"

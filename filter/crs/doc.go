// Package crs runs the OWASP CRS regression suite (the ftw-tests-schema
// YAML embedded in coraza-coreruleset) with go-ftw's runner library against
// a real Envoy on 127.0.0.1 that loads the real libcorazawaf.so. It has only
// tests; the known failures and their reasons are in testdata/ignored.yaml.
//
// `make test` sets WAFSWEEP_E2E=required, so a missing Envoy or module
// fails instead of skipping.
package crs

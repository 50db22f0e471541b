//go:build !race

package conformance

// raceBuild: see race_test.go.
const raceBuild = false

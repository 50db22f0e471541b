//go:build !race

package fleet_test

// raceBuild: see race_test.go.
const raceBuild = false

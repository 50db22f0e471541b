//go:build race

package fleet_test

// raceBuild: the test runs under -race, so the workers are built with
// -race too, and the fleet doubles as a race test of the shared state.
const raceBuild = true

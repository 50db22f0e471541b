//go:build race

package conformance

// raceBuild: the test runs under -race, so the client is built with -race
// too. It then reuses the packages this test run already compiled, and the
// suite doubles as a race test of the runtime and the oauth strategy.
const raceBuild = true

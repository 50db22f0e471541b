//go:build !race

package config_test

// raceSlowdown scales time bounds: the race detector makes code several
// times slower.
const raceSlowdown = 1

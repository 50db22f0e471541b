//go:build race

package bodylimit

// raceEnabled: the race detector drops a quarter of what sync.Pool is
// given, so a pool saves less under it.
const raceEnabled = true

//go:build !race

package bodylimit

const raceEnabled = false

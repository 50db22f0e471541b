package config

import (
	"maps"
	"slices"
)

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// SortedKeys returns a map's keys in order, so that checks over maps report
// in a stable order.
func SortedKeys[V any](m map[string]V) []string { return sortedKeys(m) }

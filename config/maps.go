package config

import (
	"maps"
	"slices"
)

// SortedKeys returns a map's keys in order.
//
// Deprecated: use slices.Sorted(maps.Keys(m)).
func SortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

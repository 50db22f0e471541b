package config

import (
	"strconv"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"go.yaml.in/yaml/v3"
)

// Index maps config paths to where they were written. koanf drops positions,
// so the loader keeps one index per parsed layer; a deployment's index is the
// layers stacked, later ones winning.
type Index struct {
	layers []layerIndex
}

type layerIndex struct {
	file string
	pos  map[string]pos // key: path
}

type pos struct {
	keyLine, keyCol int // where the key was written (0 for list items)
	line, col       int // where the value starts
}

// newLayer indexes one parsed YAML document.
func newLayer(file string, root *yaml.Node) layerIndex {
	li := layerIndex{file: file, pos: map[string]pos{}}
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root != nil {
		li.pos[""] = pos{line: root.Line, col: root.Column}
		li.walk(nil, root)
	}
	return li
}

func (li layerIndex) walk(path []string, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := append(path[:len(path):len(path)], keyText(k))
			li.pos[PathString(p)] = pos{keyLine: k.Line, keyCol: k.Column, line: v.Line, col: v.Column}
			li.walk(p, v)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := append(path[:len(path):len(path)], strconv.Itoa(i))
			li.pos[PathString(p)] = pos{line: v.Line, col: v.Column}
			li.walk(p, v)
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			li.walk(path, n.Alias)
		}
	}
}

// add stacks a layer on top of the index.
func (ix *Index) add(l layerIndex) { ix.layers = append(ix.layers, l) }

// Range returns where path was last set, or where its nearest written
// ancestor was, so that a diagnostic about a missing key points at the
// block that should hold it. It returns nil when nothing is known.
func (ix *Index) Range(path string) *diag.Range {
	if ix == nil {
		return nil
	}
	segs := SplitPath(path)
	for n := len(segs); n >= 0; n-- {
		p := PathString(segs[:n])
		for i := len(ix.layers) - 1; i >= 0; i-- {
			l := ix.layers[i]
			if ps, ok := l.pos[p]; ok {
				if ps.keyLine > 0 {
					return &diag.Range{File: l.file, Line: ps.keyLine, Column: ps.keyCol}
				}
				return &diag.Range{File: l.file, Line: ps.line, Column: ps.col}
			}
		}
	}
	return nil
}

// KeyRange returns where the key of path was written (for unknown keys),
// falling back to [Index.Range].
func (ix *Index) KeyRange(path string) *diag.Range {
	if ix == nil {
		return nil
	}
	p := PathString(SplitPath(path))
	for i := len(ix.layers) - 1; i >= 0; i-- {
		l := ix.layers[i]
		if ps, ok := l.pos[p]; ok && ps.keyLine > 0 {
			return &diag.Range{File: l.file, Line: ps.keyLine, Column: ps.keyCol}
		}
	}
	return ix.Range(path)
}

// Layer reports the file of the layer that last set path, or "".
func (ix *Index) Layer(path string) string {
	if ix == nil {
		return ""
	}
	p := PathString(SplitPath(path))
	for i := len(ix.layers) - 1; i >= 0; i-- {
		if _, ok := ix.layers[i].pos[p]; ok {
			return ix.layers[i].file
		}
	}
	return ""
}

// Locate fills in the Range of every diagnostic that has none, from its Path.
func (ix *Index) Locate(ds diag.Diagnostics) {
	for i := range ds {
		if ds[i].Range == nil {
			if ds[i].Code == diag.ConfigKeyUnknown {
				ds[i].Range = ix.KeyRange(ds[i].Path)
			} else {
				ds[i].Range = ix.Range(ds[i].Path)
			}
		}
	}
}

// PathString joins path segments: map keys with dots, list indexes in
// brackets, and keys that contain dots or brackets (or are empty) quoted in
// brackets; see [setting.PathString].
func PathString(segs []string) string { return setting.PathString(segs) }

// SplitPath is the inverse of [PathString]; see [setting.SplitPath].
func SplitPath(p string) []string { return setting.SplitPath(p) }

// Join appends keys to a path; see [setting.Join].
func Join(path string, keys ...string) string { return setting.Join(path, keys...) }

// Item appends a list index to a path; see [setting.Item].
func Item(path string, i int) string { return setting.Item(path, i) }

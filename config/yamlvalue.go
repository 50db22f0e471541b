package config

import (
	"github.com/heddlehq/heddle/diag"
	"go.yaml.in/yaml/v3"
)

// decodeNode checks the document rooted at n against the limits and builds
// the value it stands for: maps with string keys, lists and scalars.
func decodeNode(file string, n *yaml.Node) (any, diag.Diagnostics) {
	values, d := checkDocument(file, n)
	if d != nil {
		return nil, diag.Diagnostics{*d}
	}
	v, d := buildValue(file, n, values)
	if d != nil {
		return nil, diag.Diagnostics{*d}
	}
	return v, nil
}

// buildValue turns a document that [checkDocument] accepted into maps and
// lists, as yaml.v3's decoder would into a map[string]any: the same scalars
// (yaml.v3 resolves them, all in one call), aliases expanded into copies,
// merge keys (<<) filling in what a mapping does not set. It does not use
// yaml.v3 for mappings because that compares every pair of keys of each
// mapping, and writes an error string for every pair that repeats: time
// quadratic in a mapping's size, and gigabytes for a few kilobytes of
// repeated keys. checkDocument has refused repeated keys already. Every
// key is its text as written, at any depth.
func buildValue(file string, n *yaml.Node, scalars []*yaml.Node) (any, *diag.Diagnostic) {
	b := &valueBuilder{file: file, nodes: scalars, anchored: map[*yaml.Node]any{}}
	if d := b.decodeScalars(); d != nil {
		return nil, d
	}
	v := b.value(n)
	if b.fail != nil {
		return nil, b.fail
	}
	return v, nil
}

type valueBuilder struct {
	file     string
	nodes    []*yaml.Node // scalars in document order, as checkDocument found them
	values   []any        // their values
	next     int
	anchored map[*yaml.Node]any // values of anchored nodes, for aliases to copy
	fail     *diag.Diagnostic
}

// decodeScalars resolves every scalar through yaml.v3 as one list, so that
// tags, numbers, booleans, timestamps and !!binary mean what they mean to
// yaml.v3. When the list fails, each scalar is decoded alone to find the
// one at fault.
func (b *valueBuilder) decodeScalars() *diag.Diagnostic {
	list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: b.nodes}
	if err := list.Decode(&b.values); err == nil && len(b.values) == len(b.nodes) {
		return nil
	}
	b.values = make([]any, len(b.nodes))
	for i, n := range b.nodes {
		if err := n.Decode(&b.values[i]); err != nil {
			d := diag.Errorf(diag.ConfigParse, "", "invalid YAML: %s", yamlMessage(err)).At(nodeRange(b.file, n))
			return &d
		}
	}
	return nil
}

// take returns the value of the scalar n, the next in document order.
func (b *valueBuilder) take(n *yaml.Node) any {
	if b.next < len(b.nodes) && b.nodes[b.next] == n {
		b.next++
		return b.values[b.next-1]
	}
	// The walk went out of step with checkDocument's: decode n alone
	// rather than hand out another scalar's value.
	var v any
	if err := n.Decode(&v); err != nil {
		b.parseError(n, "invalid YAML: %s", yamlMessage(err))
	}
	return v
}

func (b *valueBuilder) value(n *yaml.Node) any {
	if b.fail != nil {
		return nil
	}
	var v any
	switch n.Kind {
	case yaml.ScalarNode:
		v = b.take(n)
	case yaml.SequenceNode:
		list := make([]any, len(n.Content))
		for i, e := range n.Content {
			list[i] = b.value(e)
		}
		v = list
	case yaml.MappingNode:
		v = b.mapping(n)
	case yaml.AliasNode:
		t, ok := b.anchored[n.Alias]
		if !ok {
			b.parseError(n, "alias to an anchor that is not written before it")
			return nil
		}
		return copyValue(t)
	}
	if n.Anchor != "" {
		b.anchored[n] = v
	}
	return v
}

func (b *valueBuilder) mapping(n *yaml.Node) map[string]any {
	out := make(map[string]any, len(n.Content)/2)
	var mergeNode *yaml.Node
	var merged any
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Anchor != "" {
			b.anchored[k] = b.take(k)
		}
		if isMerge(k) {
			mergeNode, merged = v, b.value(v)
			continue
		}
		out[keyText(k)] = b.value(v)
	}
	if mergeNode != nil && b.fail == nil {
		b.merge(out, mergeNode, merged)
	}
	return out
}

// merge fills in out from the value of a merge key, as yaml.v3 does: keys
// the mapping sets itself win, then the merged mappings in their order.
func (b *valueBuilder) merge(out map[string]any, n *yaml.Node, v any) {
	var sources []any
	switch {
	case isMapping(n):
		sources = []any{v}
	case n.Kind == yaml.SequenceNode:
		for _, e := range n.Content {
			if !isMapping(e) {
				b.parseError(e, "a merge key (<<) takes a mapping or a list of mappings")
				return
			}
		}
		sources, _ = v.([]any)
	default:
		b.parseError(n, "a merge key (<<) takes a mapping or a list of mappings")
		return
	}
	for _, s := range sources {
		m, _ := s.(map[string]any)
		for k, e := range m {
			if _, set := out[k]; !set {
				out[k] = e
			}
		}
	}
}

func (b *valueBuilder) parseError(n *yaml.Node, format string, args ...any) {
	if b.fail == nil {
		d := diag.Errorf(diag.ConfigParse, "", format, args...).At(nodeRange(b.file, n))
		b.fail = &d
	}
}

// isMerge reports whether k is the merge key, <<, as yaml.v3 reads it.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

func isMapping(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n.Kind == yaml.MappingNode
}

// copyValue copies the maps and lists of v, so that what an alias expands
// to is a value of its own, as yaml.v3 makes it.
func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = copyValue(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = copyValue(e)
		}
		return l
	}
	return v
}

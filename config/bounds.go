package config

import (
	"strconv"

	"github.com/heddlehq/heddle/diag"
	"go.yaml.in/yaml/v3"
)

// Limits on one configuration document: a file (api.yaml, an overlay,
// agent.yaml) or the value of one HEDDLE_ variable. YAML is untrusted input:
// a few hundred bytes of aliases can stand for billions of nodes, and an
// alias may refer to the node that contains it. heddle checks the parsed
// node tree against these limits before it builds any map from it, so a
// document over a limit costs no more than parsing it. Each refusal is
// CONFIG_LIMIT at the node that crosses the limit; docs/configuration.md
// ("Limits") says the same to operators.
const (
	// MaxDocumentBytes is the size of the largest document heddle parses,
	// checked before parsing: yaml.v3 builds the whole node tree before
	// anything can look at it, which for one MiB of dense YAML takes up to
	// half a second and 70 MB (for 4 MiB, two seconds and 400 MB). Real
	// deployments are a few kilobytes.
	MaxDocumentBytes = 1 << 20
	// MaxDepth is the deepest nesting of mappings and lists, the top-level
	// mapping being level 1. An alias nests what it refers to at its own
	// level, so the limit holds with aliases expanded.
	MaxDepth = 100
	// MaxNodes is the most nodes (keys, values and list items) a document
	// may hold with every alias expanded: an alias counts as the nodes it
	// stands for.
	MaxNodes = 100_000
	// MaxFlatBytes bounds the document written out flat, every value on a
	// line of its own under its full config path and every alias expanded:
	// the form in which heddle indexes positions and merges layers. It keeps
	// long keys nested deep, or a long value behind many aliases, from
	// multiplying within the node limit.
	MaxFlatBytes = 16 << 20
)

// limitsDetail points an operator at the documentation of the limits.
const limitsDetail = "the limits are documented under Limits in docs/configuration.md"

// docCheck walks one parsed document before anything is decoded from it:
// it enforces the limits above, counting what each alias expands to from
// what was recorded for its anchor (so a bomb of nested aliases is refused
// in time linear in its text), and checks that every key is a non-empty,
// non-null scalar written once per mapping. It records the scalar values
// in document order for [buildValue].
type docCheck struct {
	file     string
	nodes    int // nodes written in the document
	expanded int // nodes with every alias expanded
	flat     int // bytes of the flat form, aliases expanded
	done     map[*yaml.Node]expansion
	open     map[*yaml.Node]bool // anchored nodes being walked: an alias to one is a cycle
	path     []string
	values   []*yaml.Node
	fail     *diag.Diagnostic
}

// expansion is what an anchored node stands for wherever an alias repeats it.
type expansion struct {
	nodes  int // nodes, the anchored one included
	height int // levels of nesting, the anchored node's own included
	flat   int // bytes of the flat form beyond the path the node is written at
}

// checkDocument checks the document rooted at n and returns its scalar
// values in document order, or the first problem found.
func checkDocument(file string, n *yaml.Node) ([]*yaml.Node, *diag.Diagnostic) {
	c := &docCheck{file: file, done: map[*yaml.Node]expansion{}, open: map[*yaml.Node]bool{}}
	c.walk(n, 1, 0)
	if c.fail != nil {
		return nil, c.fail
	}
	return c.values, nil
}

// walk checks n, at nesting level depth and written under a path of
// pathLen bytes, and returns its height. It stops at the first problem,
// which it records in c.fail.
func (c *docCheck) walk(n *yaml.Node, depth, pathLen int) int {
	if c.fail != nil {
		return 0
	}
	if depth > MaxDepth {
		c.limit(n, "nesting is deeper than %d levels", MaxDepth)
		return 0
	}
	if n.Kind == yaml.AliasNode {
		return c.alias(n, depth, pathLen)
	}
	e0, f0 := c.expanded, c.flat
	if !c.count(n, pathLen+len(n.Value)) {
		return 0
	}
	if n.Anchor != "" {
		c.open[n] = true
	}
	height := 1
	switch n.Kind {
	case yaml.MappingNode:
		height = c.mapping(n, depth, pathLen)
	case yaml.SequenceNode:
		for i, v := range n.Content {
			c.path = append(c.path, strconv.Itoa(i))
			height = max(height, 1+c.walk(v, depth+1, pathLen+len(c.path[len(c.path)-1])+2))
			c.path = c.path[:len(c.path)-1]
			if c.fail != nil {
				return 0
			}
		}
	case yaml.ScalarNode:
		c.values = append(c.values, n)
	}
	if n.Anchor != "" {
		delete(c.open, n)
		nodes := c.expanded - e0
		c.done[n] = expansion{nodes: nodes, height: height, flat: c.flat - f0 - nodes*pathLen}
	}
	return height
}

// mapping checks the keys of n and walks its values.
func (c *docCheck) mapping(n *yaml.Node, depth, pathLen int) int {
	height := 1
	var seen map[string]*yaml.Node
	if len(n.Content) > 16 {
		seen = make(map[string]*yaml.Node, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		v := n.Content[i+1]
		key, ok := c.key(n, i, seen, depth+1, pathLen)
		if !ok {
			return 0
		}
		c.path = append(c.path, key)
		height = max(height, 1+c.walk(v, depth+1, pathLen+len(key)+1))
		c.path = c.path[:len(c.path)-1]
		if c.fail != nil {
			return 0
		}
	}
	return height
}

// key checks the key at n.Content[i] and counts it; it returns the key's
// text. A key must be a scalar (an alias to one will do), neither null nor
// empty, and appear once in its mapping.
func (c *docCheck) key(n *yaml.Node, i int, seen map[string]*yaml.Node, depth, pathLen int) (string, bool) {
	k := n.Content[i]
	if depth > MaxDepth {
		c.limit(k, "nesting is deeper than %d levels", MaxDepth)
		return "", false
	}
	kn := k
	if k.Kind == yaml.AliasNode {
		kn = k.Alias
		if kn == nil {
			c.parseError(k, c.path, "alias to an unknown anchor")
			return "", false
		}
	}
	switch {
	case kn.Kind != yaml.ScalarNode:
		c.parseError(k, c.path, "a key must be a name, not a list or a mapping")
		return "", false
	case kn.ShortTag() == "!!null":
		c.parseError(k, c.path, "a key must not be null")
		return "", false
	case kn.Value == "":
		c.parseError(k, c.path, "a key must not be empty")
		return "", false
	}
	key := kn.Value
	if first := c.duplicate(n, i, key, seen); first != nil {
		c.parseError(k, append(c.path, key), "key written twice in one mapping (first at line %d)", first.Line)
		return "", false
	}
	if !c.count(k, pathLen+len(key)+1+len(key)) {
		return "", false
	}
	if k.Anchor != "" {
		// An anchored key may be repeated as a value; buildValue decodes it
		// like one.
		c.values = append(c.values, k)
		c.done[k] = expansion{nodes: 1, height: 1, flat: len(key)}
	}
	return key, true
}

// duplicate returns the earlier key of n written as key, if any. Small
// mappings are searched; large ones use seen, which it fills.
func (c *docCheck) duplicate(n *yaml.Node, i int, key string, seen map[string]*yaml.Node) *yaml.Node {
	if seen != nil {
		if first, ok := seen[key]; ok {
			return first
		}
		seen[key] = n.Content[i]
		return nil
	}
	for j := 0; j < i; j += 2 {
		if keyText(n.Content[j]) == key {
			return n.Content[j]
		}
	}
	return nil
}

// alias counts what the alias n stands for, at nesting level depth.
func (c *docCheck) alias(n *yaml.Node, depth, pathLen int) int {
	t := n.Alias
	if t == nil {
		c.parseError(n, c.path, "alias to an unknown anchor")
		return 0
	}
	if c.open[t] {
		c.limit(n, "alias refers to a node that contains it, so it would expand without end")
		return 0
	}
	e, ok := c.done[t]
	if !ok {
		// yaml.v3 resolves an alias to an anchor written before it, which
		// is either done or open; anything else is refused, not guessed at.
		c.parseError(n, c.path, "alias to an anchor that is not written before it")
		return 0
	}
	switch {
	case depth-1+e.height > MaxDepth:
		c.limit(n, "alias expands the nesting deeper than %d levels", MaxDepth)
		return 0
	case e.nodes > MaxNodes-c.expanded:
		c.limit(n, "aliases expand the document to more than %d nodes", MaxNodes)
		return 0
	}
	c.expanded += e.nodes
	c.flat += e.nodes*pathLen + e.flat
	if c.flat > MaxFlatBytes {
		c.limit(n, "aliases expand the document to more than %d bytes written out flat", MaxFlatBytes)
		return 0
	}
	return e.height
}

// count adds the node n, whose flat form takes flat bytes.
func (c *docCheck) count(n *yaml.Node, flat int) bool {
	c.nodes++
	c.expanded++
	c.flat += flat
	switch {
	case c.nodes > MaxNodes:
		c.limit(n, "the document has more than %d nodes", MaxNodes)
	case c.expanded > MaxNodes:
		c.limit(n, "aliases expand the document to more than %d nodes", MaxNodes)
	case c.flat > MaxFlatBytes:
		c.limit(n, "the document takes more than %d bytes written out flat", MaxFlatBytes)
	default:
		return true
	}
	return false
}

func (c *docCheck) limit(n *yaml.Node, format string, args ...any) {
	d := diag.Errorf(diag.ConfigLimit, diagPath(c.path), format, args...).
		WithDetail(limitsDetail).At(nodeRange(c.file, n))
	c.fail = &d
}

func (c *docCheck) parseError(n *yaml.Node, path []string, format string, args ...any) {
	d := diag.Errorf(diag.ConfigParse, diagPath(path), format, args...).At(nodeRange(c.file, n))
	c.fail = &d
}

// maxDiagPath is the longest config path a diagnostic of the checks here
// carries. A path through a hostile document can be as long as the
// document; past this, the diagnostic has its line and column only.
const maxDiagPath = 512

func diagPath(segs []string) string {
	n := 0
	for _, s := range segs {
		if n += len(s) + 2; n > maxDiagPath {
			return ""
		}
	}
	if p := PathString(segs); len(p) <= maxDiagPath {
		return p
	}
	return ""
}

// keyText is the text of the key k, through an alias.
func keyText(k *yaml.Node) string {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		return k.Alias.Value
	}
	return k.Value
}

func nodeRange(file string, n *yaml.Node) *diag.Range {
	return &diag.Range{File: file, Line: n.Line, Column: n.Column}
}

// sizeLimit refuses a document too large to parse.
func sizeLimit(file string) diag.Diagnostic {
	return diag.Errorf(diag.ConfigLimit, "", "the document is larger than %d bytes", MaxDocumentBytes).
		WithDetail(limitsDetail).At(&diag.Range{File: file})
}

package driver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/internal/canonjson"
)

// Pins are one kind's part of heddle.lock: each of its dependencies'
// pinned tools, by dependency name. A lock pins every tool's definition —
// everything the model reads: name, title, description, input and output
// schema, annotations — as canonical JSON (package canonjson: sorted keys,
// no HTML escaping), and the SHA-256 of that JSON. A kind opened with pins
// refuses to start when a pinned tool changed or disappeared
// (TOOL_DEFINITION_CHANGED), and withholds a tool that changes later, so
// that a dependency cannot swap a tool's meaning after it was reviewed. The
// definitions are whole so that a dependency connected on first use can
// offer its tools from the lock before it is connected.
//
// Pins are read-only once made; they are safe for concurrent use.
type Pins map[string]Pinned

// Pinned are one dependency's pinned tools.
type Pinned struct {
	Tools map[string]Pin `json:"tools"`
}

// Pin pins one tool: its canonical definition and the hash of it.
type Pin struct {
	SHA256     string          `json:"sha256"`
	Definition json.RawMessage `json:"definition"`
}

// Pinner is an Instance whose dependencies' tools a lock pins.
type Pinner interface {
	// Pins returns what each dependency offers now, by name.
	Pins() map[string][]*mcp.Tool
	// Offered reports whether any grant or declared use offers tool of
	// dependency dep: a new tool that none offers is not drift (no model
	// reads it).
	Offered(dep, tool string) bool
}

// PinOf computes a tool's pin.
func PinOf(t *mcp.Tool) Pin {
	def := Definition(t)
	b, err := canonjson.Marshal(def)
	if err != nil { // a schema holding what JSON cannot: pin its text form
		b, _ = canonjson.Marshal(fmt.Sprintf("%v", def))
	}
	sum := sha256.Sum256(b)
	return Pin{SHA256: hex.EncodeToString(sum[:]), Definition: b}
}

// Definition is a tool's definition as generic JSON values, the form the
// lock pins: name, title, description, inputSchema, outputSchema and
// annotations under their wire names, each only when the tool has it. The
// schemas are the server's own JSON (go-sdk hands them over decoded, not
// re-made); the annotations are built here field by field rather than by
// go-sdk's encoder, whose treatment of false hints changed between its
// versions.
func Definition(t *mcp.Tool) map[string]any {
	d := map[string]any{"name": t.Name}
	if t.Title != "" {
		d["title"] = t.Title
	}
	if t.Description != "" {
		d["description"] = t.Description
	}
	for key, s := range map[string]any{"inputSchema": t.InputSchema, "outputSchema": t.OutputSchema} {
		if s == nil {
			continue
		}
		if g, err := canonjson.Generic(s); err == nil {
			d[key] = g
		}
	}
	if a := t.Annotations; a != nil {
		an := map[string]any{"readOnlyHint": a.ReadOnlyHint, "idempotentHint": a.IdempotentHint}
		if a.DestructiveHint != nil {
			an["destructiveHint"] = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			an["openWorldHint"] = *a.OpenWorldHint
		}
		if a.Title != "" {
			an["title"] = a.Title
		}
		d["annotations"] = an
	}
	return d
}

// Tool returns the pinned definition as a tool, as a lazy server offers it
// before it connects.
func (p Pin) Tool() (*mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(p.Definition, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Drift is one difference between a lock and what a dependency offers now.
type Drift struct {
	// Kind is the dependency's kind; Dependency its name (an MCP server's,
	// for which the lock was first made: hence its JSON name).
	Kind       string `json:"kind,omitempty"`
	Dependency string `json:"server"`
	Tool       string `json:"tool,omitempty"`
	// Change is changed, removed, new or renamed (of a tool), or unopened:
	// the lock pins a dependency that no grant or declared use opens any
	// more.
	Change string `json:"change"`
	// Fields are the parts of the definition that changed, by their wire
	// names (description, inputSchema, annotations, …).
	Fields []string `json:"fields,omitempty"`
	// To is a renamed tool's new name.
	To string `json:"to,omitempty"`
}

// Kinds of Drift.
const (
	DriftChanged  = "changed"
	DriftRemoved  = "removed"
	DriftNew      = "new"
	DriftRenamed  = "renamed"
	DriftUnopened = "unopened"
)

// String is the drift as one line: "srv: search_docs: changed description".
func (d Drift) String() string {
	switch d.Change {
	case DriftChanged:
		return fmt.Sprintf("%s: %s: changed %s", d.Dependency, d.Tool, strings.Join(d.Fields, ", "))
	case DriftRenamed:
		return fmt.Sprintf("%s: %s: renamed to %s", d.Dependency, d.Tool, d.To)
	case DriftUnopened:
		return fmt.Sprintf("%s: unopened: the lock pins it, and no grant or declared use opens it", d.Dependency)
	}
	return fmt.Sprintf("%s: %s: %s", d.Dependency, d.Tool, d.Change)
}

// Drift lists how dependency dep's tools differ from the pins: a pinned
// tool that changed, was removed, or reappears under a new name with the
// same definition otherwise (renamed); and a tool the pins do not hold
// that offered reports as offered to a model (nil: every one). A
// dependency not pinned at all has every offered tool new.
func (p Pins) Drift(dep string, tools []*mcp.Tool, offered func(tool string) bool) []Drift {
	pins := p[dep].Tools
	var out []Drift
	live := map[string]bool{}
	var added []*mcp.Tool
	for _, t := range tools {
		live[t.Name] = true
		pin, pinned := pins[t.Name]
		now := PinOf(t)
		switch {
		case !pinned:
			added = append(added, t)
		case pin.SHA256 != now.SHA256:
			out = append(out, Drift{Dependency: dep, Tool: t.Name, Change: DriftChanged, Fields: changedFields(pin.Definition, now.Definition)})
		}
	}
	// A removed tool whose definition, but for its name, is that of an
	// added one was renamed; ties pair in name order.
	taken := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		if live[name] {
			continue
		}
		d := Drift{Dependency: dep, Tool: name, Change: DriftRemoved}
		key := unnamed(pins[name].Definition)
		for _, t := range added {
			if !taken[t.Name] && unnamed(PinOf(t).Definition) == key {
				taken[t.Name] = true
				d.Change, d.To = DriftRenamed, t.Name
				break
			}
		}
		out = append(out, d)
	}
	for _, t := range added {
		if !taken[t.Name] && (offered == nil || offered(t.Name)) {
			out = append(out, Drift{Dependency: dep, Tool: t.Name, Change: DriftNew})
		}
	}
	slices.SortFunc(out, func(a, b Drift) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// unnamed is a canonical definition without its name.
func unnamed(def json.RawMessage) string {
	g, _ := canonjson.Generic(def)
	m, _ := g.(map[string]any)
	delete(m, "name")
	b, _ := canonjson.Marshal(m)
	return string(b)
}

// changedFields names the top-level members in which two definitions
// differ, sorted.
func changedFields(a, b json.RawMessage) []string {
	ga, _ := canonjson.Generic(a)
	gb, _ := canonjson.Generic(b)
	ma, _ := ga.(map[string]any)
	mb, _ := gb.(map[string]any)
	keys := map[string]bool{}
	for k := range ma {
		keys[k] = true
	}
	for k := range mb {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, _ := canonjson.Marshal(ma[k])
		y, _ := canonjson.Marshal(mb[k])
		if _, inA := ma[k]; !inA {
			x = nil
		}
		if _, inB := mb[k]; !inB {
			y = nil
		}
		if !bytes.Equal(x, y) {
			out = append(out, k)
		}
	}
	return out
}

// Diff lists the pinned tools of dep that changed or vanished in tools
// (for TOOL_DEFINITION_CHANGED at start-up), and the tools the pins do not
// hold (to be logged, not refused). A dependency not pinned has neither.
func (p Pins) Diff(dep string, tools []*mcp.Tool) (changed []string, added []string) {
	if _, ok := p[dep]; !ok {
		return nil, nil
	}
	for _, d := range p.Drift(dep, tools, nil) {
		switch d.Change {
		case DriftNew:
			added = append(added, d.Tool)
		case DriftChanged:
			changed = append(changed, d.Tool)
		case DriftRemoved:
			changed = append(changed, d.Tool+" (removed)")
		case DriftRenamed:
			changed = append(changed, d.Tool+" (renamed to "+d.To+")")
			added = append(added, d.To)
		}
	}
	return changed, added
}

// Pinned reports whether a tool of dep still matches its pin; nil pins,
// and a tool or dependency they do not pin, match.
func (p Pins) Pinned(dep string, t *mcp.Tool) bool {
	pin, ok := p[dep].Tools[t.Name]
	return !ok || pin.SHA256 == PinOf(t).SHA256
}

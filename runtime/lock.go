package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/canonjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LockVersion is the format version of heddle.lock. Version 1 held hashes
// of go-sdk's own encoding of each field; version 2 holds each tool's whole
// definition in canonical JSON and one hash of it.
const LockVersion = 2

// Lock pins tool definitions: for each server, each tool's definition —
// everything the model reads: name, title, description, input and output
// schema, annotations — as canonical JSON (package canonjson: sorted keys,
// no HTML escaping), and the SHA-256 of that JSON. A runtime opened with a
// lock refuses to start when a pinned tool changed or disappeared
// (TOOL_DEFINITION_CHANGED), and withholds a tool that changes later, so
// that a server cannot swap a tool's meaning after it was reviewed. The
// definitions are whole so that a lazy server's tools can be offered from
// the lock before it is connected.
//
// A Lock is read-only once made; it is safe for concurrent use.
type Lock struct {
	Version int                   `json:"version"`
	Servers map[string]ServerLock `json:"servers"`
}

// ServerLock pins one server's tools.
type ServerLock struct {
	Tools map[string]ToolLock `json:"tools"`
}

// ToolLock pins one tool: its canonical definition and the hash of it.
type ToolLock struct {
	SHA256     string          `json:"sha256"`
	Definition json.RawMessage `json:"definition"`
}

// LockTool computes a tool's pin.
func LockTool(t *mcp.Tool) ToolLock {
	def := Definition(t)
	b, err := canonjson.Marshal(def)
	if err != nil { // a schema holding what JSON cannot: pin its text form
		b, _ = canonjson.Marshal(fmt.Sprintf("%v", def))
	}
	sum := sha256.Sum256(b)
	return ToolLock{SHA256: hex.EncodeToString(sum[:]), Definition: b}
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
func (p ToolLock) Tool() (*mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(p.Definition, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ReadLock reads a lock file. A file that cannot be read is the os error
// (the caller knows whether a missing file matters); one that is not a
// lock of this version is LOCK_INVALID, naming the file.
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseLock(path, b)
}

// ParseLock parses the contents of the lock file called name. Every pin's
// hash is checked against its definition, so that a hand-edited
// definition is not taken for a reviewed one.
func ParseLock(name string, b []byte) (*Lock, error) {
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, diag.Wrap(diag.LockInvalid, err, "%s: not a heddle lock file: %v", name, err)
	}
	if head.Version == 1 {
		return nil, diag.New(diag.LockInvalid, "%s: lock format version 1 pins hashes that this heddle computes differently; review the servers' tools and run heddle lock again to write version %d", name, LockVersion)
	}
	if head.Version != LockVersion {
		return nil, diag.New(diag.LockInvalid, "%s: lock format version %d, want %d", name, head.Version, LockVersion)
	}
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, diag.Wrap(diag.LockInvalid, err, "%s: not a heddle lock file: %v", name, err)
	}
	for _, server := range config.SortedKeys(l.Servers) {
		for _, tool := range config.SortedKeys(l.Servers[server].Tools) {
			pin := l.Servers[server].Tools[tool]
			g, err := canonjson.Generic(pin.Definition)
			m, isObject := g.(map[string]any)
			if err != nil || !isObject || m["name"] != tool {
				return nil, diag.New(diag.LockInvalid, "%s: server %s, tool %s: the definition is not an object naming the tool", name, server, tool)
			}
			c, err := canonjson.Marshal(g)
			sum := sha256.Sum256(c)
			if err != nil || hex.EncodeToString(sum[:]) != pin.SHA256 {
				return nil, diag.New(diag.LockInvalid, "%s: server %s, tool %s: sha256 does not match the definition (was the file edited by hand?); run heddle lock again", name, server, tool)
			}
			pin.Definition = c
			l.Servers[server].Tools[tool] = pin
		}
	}
	return &l, nil
}

// Encode returns the lock file's contents: indented JSON with sorted keys
// and no HTML escaping, so that one set of definitions always makes the
// same bytes.
func (l *Lock) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(l); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Pinner is an instance whose dependencies' tools a lock pins (the MCP
// servers): Pins returns what each offers now, keyed by dependency.
type Pinner interface {
	Pins() map[string][]*mcp.Tool
}

// Offerer is a Pinner that tells whether any grant or declared use offers
// a tool of one of its dependencies: a new tool that none offers is not
// drift (no model reads it).
type Offerer interface {
	Offered(server, tool string) bool
}

// Lock pins the tools every opened dependency that can be pinned offers now.
func (rt *Runtime) Lock() *Lock {
	l := &Lock{Version: LockVersion, Servers: map[string]ServerLock{}}
	for _, kind := range config.SortedKeys(rt.instances) {
		p, ok := rt.instances[kind].(Pinner)
		if !ok {
			continue
		}
		for name, tools := range p.Pins() {
			sl := ServerLock{Tools: map[string]ToolLock{}}
			for _, t := range tools {
				sl.Tools[t.Name] = LockTool(t)
			}
			l.Servers[name] = sl
		}
	}
	return l
}

// Drift is one difference between a lock and what a server offers now.
type Drift struct {
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"`
	// Change is changed, removed, new or renamed (of a tool), or unopened:
	// the lock pins a server that no grant or declared use opens any more.
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
		return fmt.Sprintf("%s: %s: changed %s", d.Server, d.Tool, strings.Join(d.Fields, ", "))
	case DriftRenamed:
		return fmt.Sprintf("%s: %s: renamed to %s", d.Server, d.Tool, d.To)
	case DriftUnopened:
		return fmt.Sprintf("%s: unopened: the lock pins it, and no grant or declared use opens it", d.Server)
	}
	return fmt.Sprintf("%s: %s: %s", d.Server, d.Tool, d.Change)
}

// Drift lists how server's tools differ from the lock: a pinned tool that
// changed, was removed, or reappears under a new name with the same
// definition otherwise (renamed); and a tool the lock does not pin that
// offered reports as offered to a model (nil: every one). A server the
// lock does not pin at all has every offered tool new.
func (l *Lock) Drift(server string, tools []*mcp.Tool, offered func(tool string) bool) []Drift {
	pins := l.Servers[server].Tools
	var out []Drift
	live := map[string]bool{}
	var added []*mcp.Tool
	for _, t := range tools {
		live[t.Name] = true
		pin, pinned := pins[t.Name]
		now := LockTool(t)
		switch {
		case !pinned:
			added = append(added, t)
		case pin.SHA256 != now.SHA256:
			out = append(out, Drift{Server: server, Tool: t.Name, Change: DriftChanged, Fields: changedFields(pin.Definition, now.Definition)})
		}
	}
	// A removed tool whose definition, but for its name, is that of an
	// added one was renamed; ties pair in name order.
	taken := map[string]bool{}
	for _, name := range config.SortedKeys(pins) {
		if live[name] {
			continue
		}
		d := Drift{Server: server, Tool: name, Change: DriftRemoved}
		key := unnamed(pins[name].Definition)
		for _, t := range added {
			if !taken[t.Name] && unnamed(LockTool(t).Definition) == key {
				taken[t.Name] = true
				d.Change, d.To = DriftRenamed, t.Name
				break
			}
		}
		out = append(out, d)
	}
	for _, t := range added {
		if !taken[t.Name] && (offered == nil || offered(t.Name)) {
			out = append(out, Drift{Server: server, Tool: t.Name, Change: DriftNew})
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
	for _, k := range config.SortedKeys(keys) {
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

// CheckLock lists how what the opened servers offer now differs from l:
// what heddle lock --check reports. New tools count only when a grant or a
// declared use offers them. A server the lock pins that is not opened
// (removed, or no grant or declared use opens it any more) is unopened:
// heddle lock would leave it out.
func (rt *Runtime) CheckLock(l *Lock) []Drift {
	var out []Drift
	opened := map[string]bool{}
	for _, kind := range config.SortedKeys(rt.instances) {
		p, ok := rt.instances[kind].(Pinner)
		if !ok {
			continue
		}
		o, _ := rt.instances[kind].(Offerer)
		pins := p.Pins()
		for _, name := range config.SortedKeys(pins) {
			opened[name] = true
			var offered func(string) bool
			if o != nil {
				offered = func(tool string) bool { return o.Offered(name, tool) }
			}
			out = append(out, l.Drift(name, pins[name], offered)...)
		}
	}
	for _, name := range config.SortedKeys(l.Servers) {
		if !opened[name] {
			out = append(out, Drift{Server: name, Change: DriftUnopened})
		}
	}
	return out
}

// Diff lists the pinned tools of server that changed or vanished in tools
// (for TOOL_DEFINITION_CHANGED at start-up), and the tools the lock does
// not pin (to be logged, not refused). A server the lock does not pin has
// neither.
func (l *Lock) Diff(server string, tools []*mcp.Tool) (changed []string, added []string) {
	if _, ok := l.Servers[server]; !ok {
		return nil, nil
	}
	for _, d := range l.Drift(server, tools, nil) {
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

// Pinned reports whether a tool of server still matches the lock; a nil
// lock, and a tool or server it does not pin, match.
func (l *Lock) Pinned(server string, t *mcp.Tool) bool {
	if l == nil {
		return true
	}
	sl, ok := l.Servers[server]
	if !ok {
		return true
	}
	pin, ok := sl.Tools[t.Name]
	return !ok || pin.SHA256 == LockTool(t).SHA256
}

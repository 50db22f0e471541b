package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"slices"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/canonjson"
	"github.com/heddlehq/heddle/runtime/driver"
)

// LockVersion is the format version of heddle.lock. Version 1 held hashes
// of go-sdk's own encoding of each field; version 2 held each MCP server's
// tools, each tool's whole definition in canonical JSON and one hash of it;
// version 3 holds the same pins keyed by kind, then by dependency, so that
// any kind can pin its tools. A version 2 file is read as version 3 with
// its servers under the mcp kind.
const LockVersion = 3

// legacyKind is the kind whose dependencies a version 2 lock pins: it knew
// MCP servers only.
const legacyKind = "mcp"

// Lock pins tool definitions: for each kind that pins (driver.Pinner), each
// of its dependencies' tools (see driver.Pins). A runtime opened with a
// lock refuses to start when a pinned tool changed or disappeared
// (TOOL_DEFINITION_CHANGED), and withholds a tool that changes later.
//
// A Lock is read-only once made; it is safe for concurrent use.
type Lock struct {
	Version int                    `json:"version"`
	Kinds   map[string]driver.Pins `json:"kinds"`
}

// ReadLock reads a lock file. A file that cannot be read is the os error
// (the caller knows whether a missing file matters); one that is not a
// lock of this version, or of version 2, is LOCK_INVALID, naming the file.
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
	var l Lock
	switch head.Version {
	case 1:
		return nil, diag.New(diag.LockInvalid, "%s: lock format version 1 pins hashes that this heddle computes differently; review the servers' tools and run heddle lock again to write version %d", name, LockVersion)
	case 2:
		var v2 struct {
			Servers driver.Pins `json:"servers"`
		}
		if err := json.Unmarshal(b, &v2); err != nil {
			return nil, diag.Wrap(diag.LockInvalid, err, "%s: not a heddle lock file: %v", name, err)
		}
		l = Lock{Version: LockVersion, Kinds: map[string]driver.Pins{legacyKind: v2.Servers}}
	case LockVersion:
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, diag.Wrap(diag.LockInvalid, err, "%s: not a heddle lock file: %v", name, err)
		}
	default:
		return nil, diag.New(diag.LockInvalid, "%s: lock format version %d, want %d", name, head.Version, LockVersion)
	}
	for kind, pins := range l.Kinds {
		if err := checkPins(name, kind, pins); err != nil {
			return nil, err
		}
	}
	return &l, nil
}

// checkPins checks every pin of one kind against its hash, and keeps its
// definition canonical.
func checkPins(name, kind string, pins driver.Pins) error {
	for _, dep := range slices.Sorted(maps.Keys(pins)) {
		for _, tool := range slices.Sorted(maps.Keys(pins[dep].Tools)) {
			pin := pins[dep].Tools[tool]
			g, err := canonjson.Generic(pin.Definition)
			m, isObject := g.(map[string]any)
			if err != nil || !isObject || m["name"] != tool {
				return diag.New(diag.LockInvalid, "%s: %s %s, tool %s: the definition is not an object naming the tool", name, kind, dep, tool)
			}
			c, err := canonjson.Marshal(g)
			sum := sha256.Sum256(c)
			if err != nil || hex.EncodeToString(sum[:]) != pin.SHA256 {
				return diag.New(diag.LockInvalid, "%s: %s %s, tool %s: sha256 does not match the definition (was the file edited by hand?); run heddle lock again", name, kind, dep, tool)
			}
			pin.Definition = c
			pins[dep].Tools[tool] = pin
		}
	}
	return nil
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

// Pins returns the pins of kind; nil for a nil lock, and an empty set for a
// kind the lock does not pin.
func (l *Lock) Pins(kind string) driver.Pins {
	if l == nil {
		return nil
	}
	if p := l.Kinds[kind]; p != nil {
		return p
	}
	return driver.Pins{}
}

// Lock pins the tools every opened dependency that can be pinned offers now.
func (rt *Runtime) Lock() *Lock {
	l := &Lock{Version: LockVersion, Kinds: map[string]driver.Pins{}}
	for _, kind := range slices.Sorted(maps.Keys(rt.instances)) {
		p, ok := rt.instances[kind].(driver.Pinner)
		if !ok {
			continue
		}
		pins := driver.Pins{}
		for name, tools := range p.Pins() {
			pt := driver.Pinned{Tools: map[string]driver.Pin{}}
			for _, t := range tools {
				pt.Tools[t.Name] = driver.PinOf(t)
			}
			pins[name] = pt
		}
		l.Kinds[kind] = pins
	}
	return l
}

// CheckLock lists how what the opened dependencies offer now differs from
// l: what heddle lock --check reports. New tools count only when a grant
// or a declared use offers them. A dependency the lock pins that is not
// opened (removed, or no grant or declared use opens it any more) is
// unopened: heddle lock would leave it out.
func (rt *Runtime) CheckLock(l *Lock) []driver.Drift {
	var out []driver.Drift
	opened := map[string]map[string]bool{}
	for _, kind := range slices.Sorted(maps.Keys(rt.instances)) {
		p, ok := rt.instances[kind].(driver.Pinner)
		if !ok {
			continue
		}
		opened[kind] = map[string]bool{}
		now := p.Pins()
		for _, name := range slices.Sorted(maps.Keys(now)) {
			opened[kind][name] = true
			offered := func(tool string) bool { return p.Offered(name, tool) }
			for _, d := range l.Pins(kind).Drift(name, now[name], offered) {
				d.Kind = kind
				out = append(out, d)
			}
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(l.Kinds)) {
		for _, name := range slices.Sorted(maps.Keys(l.Kinds[kind])) {
			if !opened[kind][name] {
				out = append(out, driver.Drift{Kind: kind, Dependency: name, Change: driver.DriftUnopened})
			}
		}
	}
	return out
}

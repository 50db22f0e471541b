package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/heddlehq/heddle/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LockVersion is the format version of heddle.lock.
const LockVersion = 1

// Lock pins tool definitions: for each server, each tool's description,
// schemas and annotations as hashes. A runtime opened with a lock refuses
// to start when a pinned tool changed or disappeared
// (TOOL_DEFINITION_CHANGED), and drops a tool that changes later, so that a
// server cannot swap a tool's meaning after it was reviewed.
type Lock struct {
	Version int                   `json:"version"`
	Servers map[string]ServerLock `json:"servers"`
}

// ServerLock pins one server's tools.
type ServerLock struct {
	Tools map[string]ToolLock `json:"tools"`
}

// ToolLock holds one tool's hashes.
type ToolLock struct {
	Description  string `json:"description"`
	InputSchema  string `json:"input_schema"`
	OutputSchema string `json:"output_schema,omitempty"`
	Annotations  string `json:"annotations,omitempty"`
}

// LockTool computes a tool's pins.
func LockTool(t *mcp.Tool) ToolLock {
	l := ToolLock{Description: hashJSON(t.Description), InputSchema: hashJSON(t.InputSchema)}
	if t.OutputSchema != nil {
		l.OutputSchema = hashJSON(t.OutputSchema)
	}
	if t.Annotations != nil {
		l.Annotations = hashJSON(t.Annotations)
	}
	return l
}

func hashJSON(v any) string {
	b, _ := json.Marshal(v) // maps marshal with sorted keys: stable
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ReadLock reads a lock file.
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: not a heddle lock file: %w", path, err)
	}
	if l.Version != LockVersion {
		return nil, fmt.Errorf("%s: lock format version %d, want %d", path, l.Version, LockVersion)
	}
	return &l, nil
}

// Pinner is an instance whose dependencies' tools a lock pins (the MCP
// servers): Pins returns what each offers now, keyed by dependency.
type Pinner interface {
	Pins() map[string][]*mcp.Tool
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

// Diff lists the pinned tools of server that changed or vanished in tools,
// and the tools the lock does not pin (to be logged, not refused).
func (l *Lock) Diff(server string, tools []*mcp.Tool) (changed []string, added []string) {
	sl, ok := l.Servers[server]
	if !ok {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, t := range tools {
		seen[t.Name] = true
		pin, pinned := sl.Tools[t.Name]
		switch {
		case !pinned:
			added = append(added, t.Name)
		case pin != LockTool(t):
			changed = append(changed, t.Name)
		}
	}
	for name := range sl.Tools {
		if !seen[name] {
			changed = append(changed, name+" (removed)")
		}
	}
	sort.Strings(changed)
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
	return !ok || pin == LockTool(t)
}

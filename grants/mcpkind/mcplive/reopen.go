package mcplive

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/runtime/driver"
)

// Reopen opens the mcp kind for a new generation of the configuration
// (runtime.Reopen): a server whose connection spec did not change is
// adopted from prev — its session, its child process, its tool list and
// its supervisor go on, shared by both generations, and nothing
// reconnects — and only the servers that are new or changed are opened,
// under the start-up deadline, like at start-up. The old generation's
// Close then releases its own references only: an adopted server closes
// when the last generation holding it does.
func (k Kind) Reopen(ctx context.Context, env driver.Env, prev driver.Instance) (driver.Instance, []*driver.Failure, error) {
	p, _ := prev.(*instance)
	return k.open(ctx, env, p)
}

// adopt takes prev's server name into i when its connection spec is the
// same in both plans, and reports whether it did. The adopted server keeps
// what it was opened with: its resolved secrets and auth strategy, and the
// runtime options of its transport. The caller keeps the release of i's
// reference.
func (i *instance) adopt(prev *instance, name string) (release func(), ok bool) {
	if prev == nil {
		return nil, false
	}
	s := prev.servers[name]
	if s == nil || !sameConnection(s.spec, i.specs[name]) {
		return nil, false
	}
	release, ok = s.acquire()
	if !ok {
		return nil, false // closed meanwhile: open a new one
	}
	s.mu.Lock()
	s.owners = append(s.owners, i)
	s.mu.Unlock()
	i.servers[name] = s
	i.log.Debug("server kept across the reload", "server", name)
	return release, true
}

// sameConnection reports whether two plans' entries for one server open
// the same connection: everything the entry says but who grants the
// server and whether it is required, which only decide what start-up and
// health make of it.
func sameConnection(a, b *mcpkind.Server) bool {
	if a == nil || b == nil {
		return false
	}
	x, y := *a, *b
	x.GrantedTo, y.GrantedTo = nil, nil
	x.Required, y.Required = false, false
	ja, erra := json.Marshal(x)
	jb, errb := json.Marshal(y)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// owning returns the instances that hold the server, oldest first.
func (s *server) owning() []*instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.owners)
}

// newest is the instance of the newest generation that holds the server,
// or nil once none does.
func (s *server) newest() *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.owners) == 0 {
		return nil
	}
	return s.owners[len(s.owners)-1]
}

// disown forgets i, which is closing, as a holder of the server.
func (s *server) disown(i *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owners = slices.DeleteFunc(s.owners, func(o *instance) bool { return o == i })
}

var _ driver.Reopener = Kind{}

package mcplive

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime/driver"
)

// A server declared connect: lazy is not connected at start-up. Its tools
// are offered from heddle.lock, whose pins hold whole definitions; the
// server is idle (driver.StateIdle) and readiness does not wait for it.
// The first call — or Refresh — connects it, single-flight through its
// supervisor and under its handshake budget (ai.startup_timeout_ms), and
// checks the live listing against the lock: under ai.pinning: strict a
// drift leaves the server unavailable with TOOL_DEFINITION_CHANGED (its
// supervisor keeps trying, so that a server that goes back to its pinned
// tools serves again); under warn it is logged and the live definitions
// are used. From then on the server is like any other.

// openIdle makes a lazy server idle at start-up, its tools those the lock
// pins for it. A lazy server the lock does not pin cannot offer anything:
// MCP_LAZY_UNPINNED, fatal whatever its required setting.
func (s *server) openIdle() *driver.Failure {
	sl, ok := s.inst.env.Pins[s.name]
	if !ok {
		err := diag.New(diag.MCPLazyUnpinned, "server %s is connect: lazy, but heddle.lock does not pin its tools; run heddle lock (it connects lazy servers) and deploy the lock with the worker", s.name)
		return &driver.Failure{Name: s.name, Kind: "mcp", Err: err, Fatal: true}
	}
	tools := make([]*mcp.Tool, 0, len(sl.Tools))
	for _, name := range slices.Sorted(maps.Keys(sl.Tools)) {
		t, err := sl.Tools[name].Tool()
		if err != nil {
			err = diag.Wrap(diag.LockInvalid, err, "server %s: the pinned definition of %s is not a tool", s.name, name)
			return &driver.Failure{Name: s.name, Kind: "mcp", Err: err, Fatal: true}
		}
		tools = append(tools, t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools, s.gen = tools, 1
	s.setState(driver.StateIdle)
	return nil
}

// idle reports a lazy server that was not used yet.
func (s *server) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == driver.StateIdle
}

// connectLazy connects an idle server and lists its tools, for its first
// use: one attempt of its supervisor, which concurrent callers share,
// bounded by the handshake budget and by ctx. What it found is the
// server's state: ready, or down with the coded reason.
func (s *server) connectLazy(ctx context.Context) {
	if !s.idle() {
		return
	}
	actx, cancel := context.WithTimeout(ctx, s.inst.env.Budget)
	defer cancel()
	s.log.Info("connecting lazy server on first use", "server", s.name)
	start := time.Now()
	if err := s.sup.Recheck(actx); err != nil {
		s.log.Warn("lazy server did not connect", "server", s.name, "code", diag.CodeOf(err), "error", err.Error())
		return
	}
	s.log.Info("lazy server connected", "server", s.name, "took", time.Since(start).Round(time.Millisecond))
}

// pinningWarn reports ai.pinning: warn.
func (s *server) pinningWarn() bool {
	return s.inst.env.Plan.Startup.Pinning == config.PinningWarn
}

// checkPins checks a lazy server's live listing against the lock it was
// offered from: under strict, a pinned tool that changed, went or was
// renamed is TOOL_DEFINITION_CHANGED; under warn it is logged. A tool the
// lock does not pin is no drift here (it is offered, and logged).
func (s *server) checkPins(tools []*mcp.Tool) error {
	l := s.inst.env.Pins
	if !s.lazy || l == nil {
		return nil
	}
	var lines, added []string
	for _, d := range l.Drift(s.name, tools, nil) {
		if d.Change == driver.DriftNew {
			added = append(added, d.Tool)
			continue
		}
		lines = append(lines, d.String())
	}
	if len(added) > 0 {
		s.log.Warn("server offers tools heddle.lock does not pin", "server", s.name, "tools", strings.Join(added, ","))
	}
	if len(lines) == 0 {
		return nil
	}
	err := diag.New(diag.ToolDefinitionChanged, "server %s: tools changed since heddle.lock was written: %s", s.name, strings.Join(lines, "; "))
	if s.pinningWarn() {
		s.log.Warn("lazy server's tools differ from heddle.lock; ai.pinning is warn, so they are used as the server describes them now", "server", s.name, "code", diag.ToolDefinitionChanged, "drift", strings.Join(lines, "; "))
		return nil
	}
	s.log.Error("lazy server's tools differ from heddle.lock; ai.pinning is strict, so it stays unavailable", "server", s.name, "code", diag.ToolDefinitionChanged, "drift", strings.Join(lines, "; "))
	return err
}

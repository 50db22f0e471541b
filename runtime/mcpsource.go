package runtime

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// view is one grant's filter over a server's tools.
type view struct {
	include, exclude []string
}

// mcpSource is an agent's (or a use case's) filtered view of one shared
// server. Several grants of one server in one agent are one source whose
// views are united.
type mcpSource struct {
	srv   *server
	views []view

	mu      sync.Mutex
	gen     uint64
	defs    []*toolDef
	defsSet bool
}

func (m *mcpSource) kind() string        { return "mcp" }
func (m *mcpSource) name() string        { return m.srv.name }
func (m *mcpSource) prefix() string      { return m.srv.spec.ToolPrefix }
func (m *mcpSource) maxResultBytes() int { return m.srv.spec.MaxResultBytes }
func (m *mcpSource) transportTimeout() time.Duration {
	return time.Duration(m.srv.spec.TimeoutMS) * time.Millisecond
}

func (m *mcpSource) down() bool {
	st, _, _, _ := m.srv.status()
	return st != StateReady
}

func (m *mcpSource) allowed(name string) bool {
	for _, v := range m.views {
		if filter(name, v.include, v.exclude) {
			return true
		}
	}
	return false
}

// tools returns the filtered tools, cached per generation of the server's
// listing; a stale server is re-listed first.
func (m *mcpSource) tools(ctx context.Context) ([]*toolDef, uint64, error) {
	tools, gen, err := m.srv.refresh(ctx, false)
	if err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.defsSet && m.gen == gen {
		return m.defs, gen, nil
	}
	spec := m.srv.spec
	defs := make([]*toolDef, 0, len(tools))
	for _, t := range tools {
		if !m.allowed(t.Name) {
			continue
		}
		if !m.srv.rt.pinned(m.srv.name, t) {
			m.srv.log.Error("tool changed since heddle.lock was written; it is withheld", "server", m.srv.name, "tool", t.Name, "code", diag.ToolDefinitionChanged)
			continue
		}
		d := defFromAnnotations(t)
		if matchAny(spec.ReadOnlyTools, t.Name) {
			d.readOnly, d.destructive = true, false
		}
		if matchAny(spec.IdempotentTools, t.Name) {
			d.idempotent = true
		}
		if matchAny(spec.DestructiveTools, t.Name) {
			d.destructive, d.readOnly = true, false
		}
		defs = append(defs, d)
	}
	m.defs, m.gen, m.defsSet = defs, gen, true
	return defs, gen, nil
}

func matchAny(globs []string, name string) bool {
	return slices.ContainsFunc(globs, func(g string) bool { return globMatch(g, name) })
}

// call sends one tools/call over the shared session. A request that cannot
// have reached the server is re-sent once after a reconnect, and so is any
// request to a tool marked read-only or idempotent (the operator's
// read_only_tools/idempotent_tools override the server's hints); any other
// request whose connection broke is reported, not repeated.
func (m *mcpSource) call(ctx context.Context, d *toolDef, args map[string]any, cc *callConfig) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: d.tool.Name, Arguments: args}
	if args == nil {
		params.Arguments = map[string]any{}
	}
	if cc.progress != nil {
		tok := newProgressToken()
		params.SetProgressToken(tok)
		unregister := m.srv.rt.onProgress(tok, cc.progress)
		defer unregister()
	}
	if !m.srv.hold() {
		return nil, diag.New(diag.ToolUnavailable, "server %s is closed", m.srv.name)
	}
	defer m.srv.release()
	for attempt := 0; ; attempt++ {
		sess, err := m.srv.session(ctx)
		if err != nil {
			return nil, err
		}
		res, err := sess.CallTool(ctx, params)
		if err == nil {
			return res, nil
		}
		switch classify(ctx, err) {
		case failCtx:
			return nil, ctx.Err()
		case failProtocol:
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		case failTransient:
			m.srv.log.Debug("call rejected by transport", "server", m.srv.name, "reason", err.Error())
			return nil, diag.Wrap(diag.ToolUnavailable, err, "server %s answered with a transient error; try again later", m.srv.name)
		case failNotSent:
			m.srv.broken(sess, err)
			if attempt == 0 {
				if m.srv.waitReady(ctx) == nil {
					continue
				}
			}
			return nil, diag.Wrap(diag.ToolUnavailable, err, "server %s is unavailable; reconnecting", m.srv.name)
		default: // the connection broke mid-call: the tool may have run
			m.srv.broken(sess, err)
			if attempt == 0 && (d.readOnly || d.idempotent) {
				if m.srv.waitReady(ctx) == nil {
					continue
				}
			}
			return nil, diag.Wrap(diag.ToolUnavailable, err, "the connection to server %s broke during the call, which may or may not have run; reconnecting", m.srv.name)
		}
	}
}

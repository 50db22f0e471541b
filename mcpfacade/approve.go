package mcpfacade

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// argsShown bounds the arguments an approval request shows the host's user.
const argsShown = 2000

// approvalForm is the form an approval asks the user to fill: nothing but
// the choice itself (accept, decline).
var approvalForm = map[string]any{"type": "object", "properties": map[string]any{}}

// approver asks the host's user, by elicitation, to approve a call: accept
// approves it, decline and cancel do not. A host that did not declare the
// elicitation capability (form mode) cannot be asked, and the call is not
// approved; so is a host whose answer does not come.
func (s *session) approver(ss *mcp.ServerSession) runtime.Approver {
	return func(ctx context.Context, req runtime.ApprovalRequest) (bool, error) {
		if ss == nil || !canElicit(ss.InitializeParams()) {
			return false, nil
		}
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: approvalMessage(req), RequestedSchema: approvalForm})
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			s.log.Warn("the host did not answer an approval request", "agent", s.opts.Agent, "tool", req.Tool.Name, "reason", err.Error())
			return false, nil
		}
		s.log.Info("the host answered an approval request", "agent", s.opts.Agent, "tool", req.Tool.Name, "action", res.Action)
		return res.Action == "accept", nil
	}
}

// canElicit reports whether a host declared it can be asked for a form.
func canElicit(p *mcp.InitializeParams) bool {
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// approvalMessage says what is asked and why: the tool, where it runs, for
// whom, the policy's reason and the arguments (bounded).
func approvalMessage(req runtime.ApprovalRequest) string {
	args, _ := json.Marshal(req.Args)
	shown := diag.Clip(string(args))
	if len(args) <= argsShown {
		shown = string(args)
	}
	where := req.Tool.Server
	if req.Tool.OriginalName != "" && req.Tool.OriginalName != req.Tool.Name {
		where = req.Tool.OriginalName + " of " + req.Tool.Server
	}
	return fmt.Sprintf("Agent %s asks to run %s (%s) with arguments %s. Why approval is needed: %s. Accept to run it, decline to refuse it.",
		req.Agent, req.Tool.Name, where, shown, req.Reason)
}

package mcpfacade

//lint:file-ignore SA1019 roots and sampling are deprecated from protocol 2026-07-28 on, but servers and hosts still ask for and give them: a server's requests for input pass through.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// modernVersion is the first protocol revision without sessions (SEP-2575,
// 2567): each request carries its version and client capabilities, and a
// server that needs input answers input_required (SEP-2322).
const modernVersion = "2026-07-28"

// protocolVersions are the revisions the facade speaks: 2026-07-28 (per
// request) and those of the initialize handshake.
var protocolVersions = append([]string{modernVersion}, handshakeVersions...)

// approvalInput is the id of the facade's own input request: its approval
// of a call.
const approvalInput = "heddle_approval"

// errAskHost is the approver's report that the host must be asked.
var errAskHost = errors.New("the host is asked to approve the call")

// isModern reports whether a request is of 2026-07-28 or later.
func isModern(req *mcp.CallToolRequest) bool {
	return req.ProtocolVersion() >= modernVersion
}

// callModern calls a tool for a host of 2026-07-28, which has no session
// to be asked in. A call that needs approval answers input_required with
// an elicitation (approvalInput); a call whose upstream server asks for
// input answers input_required with the server's requests. Either way the
// requestState is the facade's own, sealed (Sealer): bound to the agent,
// the caller, the tool and the arguments, single-use and expiring, it
// carries the upstream server's state and that the call was approved. The
// host's retry, with its answers and that state, resumes the call. A state
// that does not open is a JSON-RPC error, -32602 with REQUEST_STATE_INVALID
// in its data; a call that needs approval from a request that did not
// declare elicitation is -32021, MCP's error for a missing client
// capability, with TOOL_APPROVAL_REQUIRED.
func (s *session) callModern(ctx context.Context, req *mcp.CallToolRequest, name string, args map[string]any, opts []runtime.CallOption) (*mcp.CallToolResult, error) {
	b := bind(s.opts.Agent, s.opts.Caller, name, args)
	var st *state
	if text := req.Params.RequestState; text != "" {
		var err error
		if st, err = s.sealer.open(ctx, text, b); err != nil {
			if diag.CodeOf(err) != diag.RequestStateInvalid { // the store that remembers states is down
				return nil, rpcError(jsonrpc.CodeInternalError, err)
			}
			return nil, rpcError(jsonrpc.CodeInvalidParams, err)
		}
	}
	responses := req.Params.InputResponses
	caps := req.ClientCapabilities()
	approved := st != nil && st.Approved
	var asked *runtime.ApprovalRequest
	cannotAsk := false
	opts = append(opts, runtime.WithApprover(func(_ context.Context, ar runtime.ApprovalRequest) (bool, error) {
		if approved {
			return true, nil
		}
		if st != nil && st.Kind == stateApproval {
			if r, ok := responses[approvalInput].(*mcp.ElicitResult); ok && r != nil {
				approved = r.Action == "accept"
				s.log.Info("the host answered an approval request", "agent", s.opts.Agent, "tool", ar.Tool.Name, "action", r.Action)
				return approved, nil
			}
		}
		asked = &ar
		cannotAsk = caps == nil || !canElicit(&mcp.InitializeParams{Capabilities: caps})
		return false, errAskHost
	}))
	in := &driver.Input{Capabilities: wireCapabilities(caps)}
	switch {
	case st == nil:
		// Answers given unasked are the upstream server's to read or
		// ignore; the facade's own (approval) is never taken without its
		// state.
		in.Responses = without(responses, approvalInput)
	case st.Kind == stateInput:
		in.State, in.Responses = st.Upstream, without(responses, approvalInput)
	}
	res, err := s.ts.Call(ctx, name, args, append(opts, runtime.WithInput(in))...)
	switch {
	case errors.Is(err, errAskHost) && cannotAsk:
		// The call needs a capability the request did not declare: the
		// revision's -32021, which says which.
		e := rpcError(mcp.CodeMissingRequiredClientCapabilities, diag.New(diag.ToolApprovalRequired,
			"%s needs approval (%s), asked of the user by elicitation, and this request did not declare the elicitation capability", name, asked.Reason))
		e.Data, _ = json.Marshal(map[string]any{"code": diag.ToolApprovalRequired, "requiredCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}})
		return nil, e
	case errors.Is(err, errAskHost) && asked != nil:
		text, err := s.sealer.seal(state{Kind: stateApproval}, b)
		if err != nil {
			return errorResult(err), nil
		}
		return inputRequired(mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{Mode: "form", Message: approvalMessage(*asked), RequestedSchema: approvalForm}}, text), nil
	case err != nil:
		return errorResult(err), nil
	case res.InputRequests != nil:
		if _, clash := res.InputRequests[approvalInput]; clash {
			return refusal(diag.MCPInputUnanswered, "the tool's server asked for input under the id %s, which the facade keeps for its own", approvalInput), nil
		}
		text, err := s.sealer.seal(state{Kind: stateInput, Approved: approved, Upstream: res.RequestState}, b)
		if err != nil {
			return errorResult(err), nil
		}
		return inputRequired(res.InputRequests, text), nil
	}
	if code, _ := res.Meta["code"].(string); code == string(diag.MCPCapabilityRequired) {
		// The upstream server's -32021 is the host's: the capability is
		// the host's to declare.
		e := rpcError(mcp.CodeMissingRequiredClientCapabilities, diag.New(diag.MCPCapabilityRequired, "%s", refusalText(res)))
		if req, ok := res.Meta["requiredCapabilities"]; ok {
			e.Data, _ = json.Marshal(map[string]any{"code": code, "requiredCapabilities": req})
		}
		return nil, e
	}
	return ownResult(res), nil
}

// refusalText is a refusal's text, without its code.
func refusalText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			_, text, _ := strings.Cut(t.Text, ": ")
			return text
		}
	}
	return ""
}

// notServed are the methods of features the facade does not serve (it
// serves tools only), refused at 2026-07-28 as methods not found: a host
// of that revision reads server/discover's capabilities, and the facade
// declares none of these. Earlier hosts are answered as before, lists
// empty: some list every feature whatever was declared.
var notServed = map[string]bool{
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true,
}

// refuseNotServed is a receiving middleware refusing notServed methods
// to requests of 2026-07-28.
func refuseNotServed(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if notServed[method] && requestVersion(req) >= modernVersion {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s: the heddle facade serves an agent's tools only", method)}
		}
		return next(ctx, method, req)
	}
}

// requestVersion is the protocol version a request's _meta carries.
func requestVersion(req mcp.Request) string {
	p := req.GetParams()
	if p == nil {
		return ""
	}
	v, _ := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string)
	return v
}

// without is m without key; m itself when it has none.
func without(m mcp.InputResponseMap, key string) mcp.InputResponseMap {
	if _, ok := m[key]; !ok {
		return m
	}
	out := maps.Clone(m)
	delete(out, key)
	return out
}

// withResultType is res with its resultType, for a request of 2026-07-28:
// input_required when it asks for input, complete otherwise. go-sdk sets
// it on the results of the tools on a server, and reads it only from the
// wire: a result is written with it and read back.
func withResultType(res *mcp.CallToolResult) *mcp.CallToolResult {
	rt := "complete"
	if res.InputRequests != nil {
		rt = "input_required"
	}
	b, err := json.Marshal(res)
	if err != nil || len(b) < 2 || b[len(b)-1] != '}' {
		return res
	}
	// Last, so that it is the value read (a result may carry its server's).
	marked := append(b[:len(b)-1:len(b)-1], `,"resultType":"`+rt+`"}`...)
	var out mcp.CallToolResult
	if err := json.Unmarshal(marked, &out); err != nil {
		return res
	}
	return &out
}

// inputRequired is an input_required result (go-sdk marks it so for a
// request of 2026-07-28 when InputRequests is set).
func inputRequired(reqs mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
}

// rpcError is err as a JSON-RPC error with code (one of JSON-RPC's own):
// heddle's code is in its data, never in the protocol's range.
func rpcError(code int64, err error) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]string{"code": string(diag.CodeOf(err))})
	return &jsonrpc.Error{Code: code, Message: err.Error(), Data: data}
}

// capabilitiesOf is a session's client capabilities; nil before initialize.
func capabilitiesOf(p *mcp.InitializeParams) *mcp.ClientCapabilities {
	if p == nil {
		return nil
	}
	return p.Capabilities
}

// wireCapabilities is caps as a request's _meta carries them
// (io.modelcontextprotocol/clientCapabilities): what an upstream server
// may ask of the host; nil for none.
func wireCapabilities(caps *mcp.ClientCapabilities) any {
	m := map[string]any{}
	if caps != nil {
		if caps.Elicitation != nil {
			m["elicitation"] = caps.Elicitation
		}
		if caps.Sampling != nil {
			m["sampling"] = caps.Sampling
		}
		switch {
		case caps.RootsV2 != nil:
			m["roots"] = caps.RootsV2
		case caps.Roots.ListChanged:
			m["roots"] = caps.Roots
		}
	}
	return m
}

package modelfmt_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/modelfmt"
	"github.com/heddlehq/heddle/runtime"
)

// searchTool has a required, an optional and a nested optional argument:
// what strict mode's nulls are about.
var searchTool = runtime.Tool{Name: "search_runbooks", Description: "Search runbooks", InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"query": {"type": "string"},
		"limit": {"type": "integer"},
		"filter": {"type": "object", "properties": {"team": {"type": "string"}, "since": {"type": "string"}}, "required": ["team"]}
	},
	"required": ["query"]
}`)}

// modelCall is, for each format, a model's response asking for one call of
// search_runbooks with args (JSON text), as the API returns it, and the
// function that takes the tool call out of it with the SDK's response
// types: the JSON ParseCall is given is what the SDK hands its user.
func modelCall(t *testing.T, f modelfmt.Format, id, args string) []byte {
	t.Helper()
	quoted, _ := json.Marshal(args)
	switch f {
	case modelfmt.Anthropic:
		var m anthropic.Message
		mustUnmarshal(t, []byte(`{"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": [{"type": "text", "text": "Searching."}, {"type": "tool_use", "id": "`+id+`", "name": "search_runbooks", "input": `+args+`}],
			"stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}`), &m)
		return []byte(m.Content[1].AsToolUse().RawJSON())
	case modelfmt.OpenAIChat:
		var c openai.ChatCompletion
		mustUnmarshal(t, []byte(`{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1",
			"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
			"tool_calls": [{"id": "`+id+`", "type": "function", "function": {"name": "search_runbooks", "arguments": `+string(quoted)+`}}]}}]}`), &c)
		return []byte(c.Choices[0].Message.ToolCalls[0].RawJSON())
	case modelfmt.OpenAIResponses:
		var r responses.Response
		mustUnmarshal(t, []byte(`{"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-4.1", "status": "completed",
			"output": [{"type": "function_call", "id": "fc_1", "call_id": "`+id+`", "name": "search_runbooks", "arguments": `+string(quoted)+`, "status": "completed"}]}`), &r)
		return []byte(r.Output[0].AsFunctionCall().RawJSON())
	case modelfmt.Gemini:
		var r genai.GenerateContentResponse
		strictDecode(t, []byte(`{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"id": "`+id+`", "name": "search_runbooks", "args": `+args+`}}]}, "finishReason": "STOP"}]}`), &r)
		b, err := json.Marshal(r.Candidates[0].Content.Parts[0])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("no model call for %s", f)
	return nil
}

// TestParseCall: each API's tool call maps back to the call the toolset
// takes; in strict mode the nulls of optional properties are removed at
// every level, and nothing else.
func TestParseCall(t *testing.T) {
	cases := []struct {
		name   string
		strict bool
		args   string
		want   map[string]any
	}{
		{"plain", false, `{"query": "disk", "limit": 3}`, map[string]any{"query": "disk", "limit": 3.0}},
		{"no arguments", false, `{}`, map[string]any{}},
		{"nulls kept without strict", false, `{"query": "disk", "limit": null}`, map[string]any{"query": "disk", "limit": nil}},
		{"strict nulls removed", true, `{"query": "disk", "limit": null, "filter": {"team": "sre", "since": null}}`,
			map[string]any{"query": "disk", "filter": map[string]any{"team": "sre"}}},
		{"strict null of an optional object", true, `{"query": "disk", "limit": 2, "filter": null}`,
			map[string]any{"query": "disk", "limit": 2.0}},
		{"strict null of a required property kept", true, `{"query": null, "limit": null, "filter": null}`,
			map[string]any{"query": nil}},
	}
	for _, f := range modelfmt.Formats() {
		for _, c := range cases {
			if c.strict && !f.Strictable() {
				continue
			}
			t.Run(string(f)+"/"+c.name, func(t *testing.T) {
				r, err := modelfmt.New(f, []runtime.Tool{searchTool}, modelfmt.Options{Strict: c.strict})
				if err != nil {
					t.Fatal(err)
				}
				call, err := r.ParseCall(modelCall(t, f, "call_42", c.args))
				if err != nil {
					t.Fatal(err)
				}
				want := modelfmt.Call{ID: "call_42", Name: "search_runbooks", Args: c.want}
				if diff := cmp.Diff(want, call); diff != "" {
					t.Errorf("call (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestParseCallRefuses: what is not a tool call of the format is a
// TOOL_ARGS_INVALID error, never a panic.
func TestParseCallRefuses(t *testing.T) {
	bad := map[modelfmt.Format][]string{
		modelfmt.Anthropic:       {`{"type": "text", "text": "hi"}`, `{"type": "tool_use", "id": "x", "name": "t", "input": [1]}`, `{"type": "tool_use", "id": "x", "input": {}}`},
		modelfmt.OpenAIChat:      {`{"id": "x", "type": "function"}`, `{"id": "x", "function": {"name": "t", "arguments": "{\"a\":"}}`, `{"id": "x", "function": {"name": "t", "arguments": "[1]"}}`},
		modelfmt.OpenAIResponses: {`{"type": "message"}`, `{"type": "function_call", "call_id": "x", "name": "t", "arguments": "7"}`},
		modelfmt.Gemini:          {`{"functionCall": {"name": "t", "args": "x"}}`, `{"text": "hi"}`, `[]`},
	}
	for f, inputs := range bad {
		r, err := modelfmt.New(f, nil, modelfmt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range append(inputs, `not json`, strings.Repeat(" ", 5<<20)) {
			if _, err := r.ParseCall([]byte(in)); !diag.Has(err, diag.ToolArgsInvalid) {
				t.Errorf("%s: ParseCall(%.60q) = %v, want %s", f, in, err, diag.ToolArgsInvalid)
			}
		}
	}
}

// TestOptions: an unknown format and strict mode outside OpenAI are
// REQUEST_INVALID.
func TestOptions(t *testing.T) {
	if _, err := modelfmt.ParseFormat("claude"); !diag.Has(err, diag.RequestInvalid) {
		t.Errorf("ParseFormat(claude) = %v", err)
	}
	if _, err := modelfmt.New("claude", nil, modelfmt.Options{}); !diag.Has(err, diag.RequestInvalid) {
		t.Errorf("New(claude) = %v", err)
	}
	for _, f := range []modelfmt.Format{modelfmt.Anthropic, modelfmt.Gemini} {
		if _, err := modelfmt.New(f, nil, modelfmt.Options{Strict: true}); !diag.Has(err, diag.RequestInvalid) {
			t.Errorf("New(%s, strict) = %v", f, err)
		}
	}
	for _, f := range modelfmt.Formats() {
		if g, err := modelfmt.ParseFormat(string(f)); err != nil || g != f {
			t.Errorf("ParseFormat(%s) = %v, %v", f, g, err)
		}
	}
}

// tinyPNG is a 1x1 PNG.
var tinyPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// results are results of each shape a tool returns.
var results = map[string]*mcp.CallToolResult{
	"text":       {Content: []mcp.Content{&mcp.TextContent{Text: "runbook: disk-full"}, &mcp.TextContent{Text: "second part"}}},
	"image":      {Content: []mcp.Content{&mcp.TextContent{Text: "a chart"}, &mcp.ImageContent{MIMEType: "image/png", Data: tinyPNG}}},
	"structured": {StructuredContent: map[string]any{"count": 2.0, "ids": []any{"a", "b"}}},
	"structured and text": {StructuredContent: map[string]any{"count": 2.0},
		Content: []mcp.Content{&mcp.TextContent{Text: `{"count":2}`}}},
	"tool error": {IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such runbook"}}},
	"refusal": {IsError: true, Meta: mcp.Meta{"code": string(diag.ToolDenied)},
		Content: []mcp.Content{&mcp.TextContent{Text: "TOOL_DENIED: a policy denies the call"}}},
	"other content": {Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
		&mcp.ResourceLink{URI: "file:///runbooks/disk.md", Name: "disk.md"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", Text: "embedded text"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2}}},
		&mcp.ImageContent{MIMEType: "image/svg+xml", Data: []byte("<svg/>")}}},
	"empty": {},
}

// TestResult renders every shape of result in every format, decodes it
// with the SDK's parameter types, and checks what each API is told.
func TestResult(t *testing.T) {
	call := modelfmt.Call{ID: "call_42", Name: "search_runbooks", Args: map[string]any{}}
	for _, f := range modelfmt.Formats() {
		r, err := modelfmt.New(f, []runtime.Tool{searchTool}, modelfmt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for name, res := range results {
			t.Run(string(f)+"/"+name, func(t *testing.T) {
				raw, err := r.Result(call, res)
				if err != nil {
					t.Fatal(err)
				}
				got := decodeResult(t, f, raw)
				if got.id != "call_42" && f != modelfmt.Gemini {
					t.Errorf("result names call %q", got.id)
				}
				if f == modelfmt.Gemini && got.name != "search_runbooks" {
					t.Errorf("functionResponse names %q", got.name)
				}
				checkResult(t, f, name, got)
			})
		}
	}
	if _, err := mustRenderer(t, modelfmt.Anthropic).Result(call, nil); !diag.Has(err, diag.ToolUnavailable) {
		t.Errorf("Result(nil) = %v", err)
	}
}

func mustRenderer(t *testing.T, f modelfmt.Format) *modelfmt.Renderer {
	t.Helper()
	r, err := modelfmt.New(f, []runtime.Tool{searchTool}, modelfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// decoded is a result read back with the SDK: the call it answers, its
// text, how many images it carries, and whether it says error.
type decoded struct {
	id, name string
	text     string
	images   int
	isError  bool
	output   any // Gemini's response.output
}

func decodeResult(t *testing.T, f modelfmt.Format, raw []byte) decoded {
	t.Helper()
	var d decoded
	switch f {
	case modelfmt.Anthropic:
		var p anthropic.ToolResultBlockParam
		mustUnmarshal(t, raw, &p)
		sameJSON(t, raw, p)
		d.id, d.isError = p.ToolUseID, p.IsError.Value
		for _, c := range p.Content {
			switch {
			case c.OfText != nil:
				d.text += c.OfText.Text + "\n"
			case c.OfImage != nil && c.OfImage.Source.OfBase64 != nil:
				d.images++
			default:
				t.Errorf("anthropic tool_result content the SDK does not read: %s", raw)
			}
		}
	case modelfmt.OpenAIChat:
		var p openai.ChatCompletionMessageParamUnion
		mustUnmarshal(t, raw, &p)
		sameJSON(t, raw, p)
		if p.OfTool == nil {
			t.Fatalf("not a tool message: %s", raw)
		}
		d.id, d.text = p.OfTool.ToolCallID, p.OfTool.Content.OfString.Value
	case modelfmt.OpenAIResponses:
		var p responses.ResponseInputItemUnionParam
		mustUnmarshal(t, raw, &p)
		sameJSON(t, raw, p)
		o := p.OfFunctionCallOutput
		if o == nil {
			t.Fatalf("not a function_call_output item: %s", raw)
		}
		d.id, d.text = o.CallID.Value, o.Output.OfString.Value
		for _, item := range o.Output.OfResponseFunctionCallOutputItemArray {
			switch {
			case item.OfInputText != nil:
				d.text += item.OfInputText.Text + "\n"
			case item.OfInputImage != nil && strings.HasPrefix(item.OfInputImage.ImageURL.Value, "data:image/"):
				d.images++
			default:
				t.Errorf("responses output item the SDK does not read: %s", raw)
			}
		}
	case modelfmt.Gemini:
		var p genai.Part
		strictDecode(t, raw, &p)
		fr := p.FunctionResponse
		if fr == nil {
			t.Fatalf("not a functionResponse part: %s", raw)
		}
		d.id, d.name, d.images = fr.ID, fr.Name, len(fr.Parts)
		if e, ok := fr.Response["error"]; ok {
			d.isError, d.text = true, e.(string)
		}
		d.output = fr.Response["output"]
		if s, ok := d.output.(string); ok {
			d.text = s
		}
	}
	return d
}

func checkResult(t *testing.T, f modelfmt.Format, name string, d decoded) {
	t.Helper()
	has := func(s string) {
		t.Helper()
		if !strings.Contains(d.text, s) {
			t.Errorf("text %q does not hold %q", d.text, s)
		}
	}
	switch name {
	case "text":
		has("runbook: disk-full")
		has("second part")
	case "image":
		has("a chart")
		if f == modelfmt.OpenAIChat {
			has("[image image/png")
		} else if d.images != 1 {
			t.Errorf("%d images, want 1", d.images)
		}
	case "structured":
		if f == modelfmt.Gemini {
			if diff := cmp.Diff(map[string]any{"count": 2.0, "ids": []any{"a", "b"}}, d.output); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		} else {
			has(`{"count":2,"ids":["a","b"]}`)
		}
	case "structured and text":
		if f != modelfmt.Gemini {
			has(`{"count":2}`)
		}
	case "tool error":
		has("no such runbook")
		switch f {
		case modelfmt.OpenAIChat, modelfmt.OpenAIResponses:
			has("Error: ")
		default:
			if !d.isError {
				t.Error("the error is not flagged")
			}
		}
	case "refusal":
		has("TOOL_DENIED")
		if strings.Contains(d.text, "Error: ") {
			t.Errorf("a refusal, whose text begins with its code, got an Error prefix: %q", d.text)
		}
	case "other content":
		for _, s := range []string{"[audio audio/wav", "file:///runbooks/disk.md", "embedded text", "file:///b.bin", "image/svg+xml"} {
			has(s)
		}
	}
}

// TestRoundTrip: the rendered definition, a model's call as its API
// returns it (SDK response types), the call through a toolset (here, the
// search tool's answer), and the result back (SDK parameter types).
func TestRoundTrip(t *testing.T) {
	for _, f := range modelfmt.Formats() {
		for _, strict := range []bool{false, true} {
			if strict && !f.Strictable() {
				continue
			}
			t.Run(string(f), func(t *testing.T) {
				r, err := modelfmt.New(f, []runtime.Tool{searchTool}, modelfmt.Options{Strict: strict})
				if err != nil {
					t.Fatal(err)
				}
				checkRendered(t, f, r.Tools())
				args := `{"query": "disk"}`
				if strict {
					args = `{"query": "disk", "limit": null, "filter": null}`
				}
				call, err := r.ParseCall(modelCall(t, f, "toolu_7", args))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(map[string]any{"query": "disk"}, call.Args); diff != "" {
					t.Fatalf("args (-want +got):\n%s", diff)
				}
				res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found: " + call.Args["query"].(string)}}}
				raw, err := r.Result(call, res)
				if err != nil {
					t.Fatal(err)
				}
				d := decodeResult(t, f, raw)
				if d.text != "found: disk" && d.text != "found: disk\n" {
					t.Errorf("result text %q", d.text)
				}
				if f != modelfmt.Gemini && d.id != "toolu_7" {
					t.Errorf("result answers %q, want toolu_7", d.id)
				}
			})
		}
	}
}

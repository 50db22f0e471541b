package serve_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/modelfmt"
)

// TestListToolsFormats: GET /v1/agents/{agent}/tools?format=… answers the
// tools as each model API's tools parameter takes them, strict=true is
// OpenAI's strict mode, and a format or a strict it does not know is 400
// REQUEST_INVALID.
func TestListToolsFormats(t *testing.T) {
	f := startTestFront(t)
	var plain []any
	if r := f.get("/v1/agents/a/tools?format=json"); r.status != 200 || json.Unmarshal(r.body, &plain) != nil || len(plain) == 0 {
		t.Fatalf("format=json: %d %s", r.status, r.body)
	}
	names := func(t *testing.T, format modelfmt.Format, body []byte) []string {
		t.Helper()
		var out []string
		switch format {
		case modelfmt.Anthropic, modelfmt.OpenAIResponses:
			var tools []struct{ Name string }
			if err := json.Unmarshal(body, &tools); err != nil {
				t.Fatal(err)
			}
			for _, tl := range tools {
				out = append(out, tl.Name)
			}
		case modelfmt.OpenAIChat:
			var tools []struct{ Function struct{ Name string } }
			if err := json.Unmarshal(body, &tools); err != nil {
				t.Fatal(err)
			}
			for _, tl := range tools {
				out = append(out, tl.Function.Name)
			}
		case modelfmt.Gemini:
			var tools []struct{ FunctionDeclarations []struct{ Name string } }
			if err := json.Unmarshal(body, &tools); err != nil || len(tools) != 1 {
				t.Fatalf("%v %s", err, body)
			}
			for _, fd := range tools[0].FunctionDeclarations {
				out = append(out, fd.Name)
			}
		}
		return out
	}
	for _, format := range modelfmt.Formats() {
		r := f.get("/v1/agents/a/tools?format=" + string(format))
		if r.status != 200 {
			t.Fatalf("format=%s: %d %s", format, r.status, r.body)
		}
		if got := names(t, format, r.body); len(got) != len(plain) {
			t.Errorf("format=%s lists %d tools %v; format=json lists %d", format, len(got), got, len(plain))
		}
	}
	if r := f.get("/v1/agents/a/tools?format=openai-chat&strict=true"); r.status != 200 || !r.contains(`"strict":true`) || !r.contains(`"additionalProperties":false`) {
		t.Errorf("strict=true: %d %s", r.status, r.body)
	}
	if r := f.get("/v1/agents/a/tools?format=openai-responses&strict=false"); r.status != 200 || r.contains(`"strict":true`) {
		t.Errorf("strict=false: %d %s", r.status, r.body)
	}
	for _, q := range []string{"format=yaml", "format=text", "format=anthropic&strict=true", "format=json&strict=true", "strict=true", "format=openai-chat&strict=yes"} {
		r := f.get("/v1/agents/a/tools?" + q)
		if got := codes(t, r); r.status != 400 || fmt.Sprint(got) != "[REQUEST_INVALID]" {
			t.Errorf("?%s: %d %v, want 400 %s", q, r.status, got, diag.RequestInvalid)
		}
	}
}

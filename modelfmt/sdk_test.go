package modelfmt_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/heddlehq/heddle/modelfmt"
)

// The provider SDKs are test-only dependencies: they prove that what
// heddle writes is what each API's own types read. deps_test.go holds
// that no package of the product imports them.

// decodeWithSDK decodes a rendered tools array with the provider SDK's
// own parameter types and fails t unless every tool is read as a function
// tool with its name, and (for the SDKs whose parameter types keep what
// they read) writes back the same JSON.
func decodeWithSDK(t *testing.T, f modelfmt.Format, raw []byte) {
	t.Helper()
	var elems []json.RawMessage
	mustUnmarshal(t, raw, &elems)
	switch f {
	case modelfmt.Anthropic:
		for _, e := range elems {
			var p anthropic.ToolUnionParam
			mustUnmarshal(t, e, &p)
			if p.OfTool == nil || p.OfTool.Name == "" {
				t.Fatalf("anthropic.ToolUnionParam read no custom tool from %s", e)
			}
			sameJSON(t, e, p)
		}
	case modelfmt.OpenAIChat:
		for _, e := range elems {
			var p openai.ChatCompletionToolUnionParam
			mustUnmarshal(t, e, &p)
			if p.OfFunction == nil || p.OfFunction.Function.Name == "" || p.OfFunction.Function.Parameters == nil {
				t.Fatalf("openai.ChatCompletionToolUnionParam read no function tool from %s", e)
			}
			sameJSON(t, e, p)
		}
	case modelfmt.OpenAIResponses:
		for _, e := range elems {
			var p responses.ToolUnionParam
			mustUnmarshal(t, e, &p)
			fn := p.OfFunction
			if fn == nil || fn.Name == "" || fn.Parameters == nil || !fn.Strict.Valid() {
				t.Fatalf("responses.ToolUnionParam read no function tool with parameters and strict from %s", e)
			}
			sameJSON(t, e, p)
		}
	case modelfmt.Gemini:
		var tools []*genai.Tool
		strictDecode(t, raw, &tools)
		if len(tools) != 1 {
			t.Fatalf("genai: %d tools, want one Tool of function declarations", len(tools))
		}
		for _, fd := range tools[0].FunctionDeclarations {
			if fd.Name == "" {
				t.Errorf("genai.FunctionDeclaration without a name in %s", raw)
			}
		}
	}
}

// strictDecode decodes b into v refusing fields v's type does not have.
func strictDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%T: %v in %.500s", v, err, b)
	}
}

// sameJSON fails t unless v, an SDK value decoded from want, writes want
// back: the SDK read every field heddle wrote.
func sameJSON(t *testing.T, want json.RawMessage, v any) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	var w, g any
	mustUnmarshal(t, want, &w)
	mustUnmarshal(t, got, &g)
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%T does not write back what it read (-heddle +sdk):\n%s", v, diff)
	}
}

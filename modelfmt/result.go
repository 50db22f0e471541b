package modelfmt

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// anthropicImages are the image types Anthropic's image blocks take
// (Messages API, "Vision": JPEG, PNG, GIF and WebP).
var anthropicImages = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// openAIImages are the image types OpenAI's image inputs take (guide
// "Images and vision": PNG, JPEG, WEBP and non-animated GIF).
var openAIImages = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}

// geminiImages are the image types Gemini takes inline (guide "Image
// understanding": PNG, JPEG, WEBP, HEIC and HEIF).
var geminiImages = []string{"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"}

// Result writes the result of call as the format's API takes it back:
//
//   - Anthropic: a tool_result content block, {"type": "tool_result",
//     "tool_use_id", "content": [text and image blocks], "is_error"}, to
//     send in a user message;
//   - OpenAI Chat Completions: a message {"role": "tool", "tool_call_id",
//     "content": "<text>"};
//   - OpenAI Responses: an input item {"type": "function_call_output",
//     "call_id", "output"}: the text, or a list of input_text and
//     input_image parts when the result has images;
//   - Gemini: a part {"functionResponse": {"name", "response": {"output"}
//     or {"error"}, "parts": [inline images]}}.
//
// Text parts are joined with newlines. An image goes where the API carries
// images (Anthropic, Responses, Gemini) and is otherwise named in the
// text; audio, resource links and embedded resources are written as text.
// Structured content is sent as JSON text when the result has no text
// (a result with both has, as MCP asks of servers, the text rendering of
// the structured content); Gemini's response is a JSON object itself, and
// its output is the structured content whenever there is one. A
// result with IsError is Anthropic's is_error, Gemini's error key, and
// text beginning "Error: " for OpenAI unless it is a refusal, whose text
// begins with its code. A nil result is an error carrying
// TOOL_UNAVAILABLE.
func (r *Renderer) Result(call Call, res *mcp.CallToolResult) (json.RawMessage, error) {
	if res == nil {
		return nil, diag.New(diag.ToolUnavailable, "the call of %s has no result to render", call.Name)
	}
	var v any
	switch r.format {
	case Anthropic:
		v = anthropicResult(call, res)
	case OpenAIChat:
		v = struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{"tool", call.ID, openAIText(res, nil)}
	case OpenAIResponses:
		v = responsesResult(call, res)
	case Gemini:
		v = geminiResult(call, res)
	}
	b, err := marshal(v)
	if err != nil {
		return nil, diag.Wrap(diag.ToolUnavailable, err, "the result of %s cannot be written as JSON", call.Name)
	}
	return b, nil
}

// part is one piece of a result: text, or an image an API may carry.
type part struct {
	text  string
	mime  string
	image []byte
}

// parts flattens a result's content. images says which image types the
// API carries; others are described in text. Structured content is added
// as JSON text when no content part is text.
func parts(res *mcp.CallToolResult, images func(mime string) bool) []part {
	var out []part
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out = append(out, part{text: c.Text})
			hasText = true
		case *mcp.ImageContent:
			if images != nil && images(c.MIMEType) {
				out = append(out, part{mime: c.MIMEType, image: c.Data})
			} else {
				out = append(out, part{text: fmt.Sprintf("[image %s, %d bytes, not shown]", c.MIMEType, len(c.Data))})
			}
		case *mcp.AudioContent:
			out = append(out, part{text: fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data))})
		case *mcp.ResourceLink:
			out = append(out, part{text: fmt.Sprintf("[resource %s: %s]", c.Name, c.URI)})
		case *mcp.EmbeddedResource:
			switch rc := c.Resource; {
			case rc == nil:
			case rc.Text != "":
				out = append(out, part{text: rc.Text})
				hasText = true
			default:
				out = append(out, part{text: fmt.Sprintf("[resource %s: %s, %d bytes, not shown]", rc.URI, rc.MIMEType, len(rc.Blob))})
			}
		}
	}
	if res.StructuredContent != nil && !hasText {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out = append(out, part{text: string(b)})
		}
	}
	return out
}

// texts joins the text of parts.
func texts(ps []part) string {
	var b strings.Builder
	for _, p := range ps {
		if p.image != nil || p.mime != "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.text)
	}
	return b.String()
}

// openAIText is a result as one string, marked as an error for a model
// that has no error flag to read.
func openAIText(res *mcp.CallToolResult, ps []part) string {
	if ps == nil {
		ps = parts(res, nil)
	}
	text := texts(ps)
	if res.IsError && runtime.RefusalCode(res) == "" {
		text = "Error: " + text
	}
	return text
}

type anthropicBlock struct {
	Type   string          `json:"type"`
	Text   string          `json:"text,omitempty"`
	Source *anthropicImage `json:"source,omitempty"`
}

type anthropicImage struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

func anthropicResult(call Call, res *mcp.CallToolResult) any {
	ps := parts(res, func(m string) bool { return slices.Contains(anthropicImages, m) })
	blocks := make([]anthropicBlock, 0, len(ps))
	for _, p := range ps {
		if p.mime != "" {
			blocks = append(blocks, anthropicBlock{Type: "image", Source: &anthropicImage{Type: "base64", MediaType: p.mime, Data: base64.StdEncoding.EncodeToString(p.image)}})
		} else {
			blocks = append(blocks, anthropicBlock{Type: "text", Text: p.text})
		}
	}
	return struct {
		Type      string           `json:"type"`
		ToolUseID string           `json:"tool_use_id"`
		Content   []anthropicBlock `json:"content,omitempty"`
		IsError   bool             `json:"is_error,omitempty"`
	}{"tool_result", call.ID, blocks, res.IsError}
}

type responsesPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

func responsesResult(call Call, res *mcp.CallToolResult) any {
	ps := parts(res, func(m string) bool { return slices.Contains(openAIImages, m) })
	var output any = openAIText(res, ps)
	if slices.ContainsFunc(ps, func(p part) bool { return p.mime != "" }) {
		list := make([]responsesPart, 0, len(ps))
		if res.IsError && runtime.RefusalCode(res) == "" {
			list = append(list, responsesPart{Type: "input_text", Text: "Error:"})
		}
		for _, p := range ps {
			if p.mime != "" {
				list = append(list, responsesPart{Type: "input_image", ImageURL: "data:" + p.mime + ";base64," + base64.StdEncoding.EncodeToString(p.image)})
			} else {
				list = append(list, responsesPart{Type: "input_text", Text: p.text})
			}
		}
		output = list
	}
	return struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output any    `json:"output"`
	}{"function_call_output", call.ID, output}
}

type geminiBlob struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiResponsePart struct {
	InlineData geminiBlob `json:"inlineData"`
}

func geminiResult(call Call, res *mcp.CallToolResult) any {
	ps := parts(res, func(m string) bool { return slices.Contains(geminiImages, m) })
	var images []geminiResponsePart
	for _, p := range ps {
		if p.mime != "" {
			images = append(images, geminiResponsePart{geminiBlob{p.mime, base64.StdEncoding.EncodeToString(p.image)}})
		}
	}
	// Gemini's response is a JSON object: "output" for what the function
	// returned, "error" for its failure (Gemini API reference,
	// FunctionResponse.response).
	response := map[string]any{}
	switch {
	case res.IsError:
		response["error"] = texts(ps)
	case res.StructuredContent != nil:
		response["output"] = res.StructuredContent
	default:
		response["output"] = texts(ps)
	}
	type functionResponse struct {
		ID       string               `json:"id,omitempty"`
		Name     string               `json:"name"`
		Response map[string]any       `json:"response"`
		Parts    []geminiResponsePart `json:"parts,omitempty"`
	}
	return struct {
		FunctionResponse functionResponse `json:"functionResponse"`
	}{functionResponse{call.ID, call.Name, response, images}}
}

// Package jsonmsg decodes the JSON-RPC messages an MCP server sends, as
// go-sdk's jsonrpc.DecodeMessage decodes them but once and without a
// streaming decoder of its own per message: with the parser go-sdk's
// decoder is built on (segmentio's), keys matched exactly, nothing after
// the value, and nesting capped at MaxDepth levels. heddle's stdio and
// Streamable HTTP transports read each message with Decode;
// TestDecodeMessage and FuzzDecodeMessage compare it with go-sdk's.
//
// What Decode returns holds no part of the bytes it was given: a reader
// may reuse its buffer for the next message.
package jsonmsg

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"
)

// wireMessage is a JSON-RPC message as it travels.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// MaxDepth is the deepest nesting of objects and arrays a message may have:
// go-sdk's limit. The decoder recurses, so a deeper line must not reach it.
const MaxDepth = 1000

// Parse decodes data into v with keys matched exactly, as go-sdk matches
// them (a "Method" is not a "method"), and nothing after the value.
func Parse(data []byte, v any) error {
	if TooDeep(data, MaxDepth) {
		return fmt.Errorf("nested deeper than %d levels", MaxDepth)
	}
	rest, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(rest) > 0 {
		err = errors.New("data after the message")
	}
	return err
}

// TooDeep reports whether the objects and arrays of data, outside strings,
// nest deeper than limit.
func TooDeep(data []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > limit {
				return true
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return false
}

// DeepRefusals returns an error response for each response in line, a
// message or batch nested deeper than MaxDepth, which is not decoded: its
// ids are found as the line is scanned.
func DeepRefusals(line []byte) []jsonrpc.Message {
	var scan msglimit.Scanner
	scan.Write(line)
	var out []jsonrpc.Message
	for _, id := range scan.Responses() {
		out = append(out, &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("the server's message nests deeper than %d levels and was not read", MaxDepth),
		}})
	}
	return out
}

// Decode decodes one JSON-RPC message as go-sdk's DecodeMessage does:
// a "method" makes it a request (a notification when it has no id), else it
// is a response, which must have an id.
func Decode(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := Parse(data, &w); err != nil {
		return nil, fmt.Errorf("the server sent a line that is not a JSON-RPC message: %w", err)
	}
	if w.JSONRPC != "2.0" {
		return nil, fmt.Errorf("the server sent a message without jsonrpc \"2.0\"")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 { // present, even as "" or null
		var method string
		if err := Parse(w.Method, &method); err != nil {
			return nil, fmt.Errorf("the server sent a request with a malformed method: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("the server sent a response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

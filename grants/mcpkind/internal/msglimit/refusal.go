// Package msglimit bounds the JSON-RPC messages an MCP server sends while
// they are read, for the transports that read them (internal/mcpstdio,
// internal/bodylimit): a message over the limit is never held whole; the
// call it answers gets a refusal, and the session goes on.
//
// A transport that gives up on a message answers the call waiting for it
// with a JSON-RPC error response of its own making: Refusal as a Go value
// where the transport hands go-sdk messages (stdio), RefusalJSON as bytes
// where go-sdk decodes them itself (HTTP). go-sdk routes that response to
// the call like any other, and Refused tells the caller the error is such a
// refusal and not one a server sent: its data carries a token drawn at
// random when the process starts and never sent to a server.
//
// The id of the call comes from the message itself, which the transport no
// longer holds: a Scanner reads a message as it passes, in pieces, and keeps
// only the ids of the responses in it, wherever in the message they are.
//
//	var s msglimit.Scanner
//	io.Copy(&s, frame) // the frame goes by; a few hundred bytes stay
//	for _, id := range s.Responses() {
//		answer(&jsonrpc.Response{ID: id, Error: msglimit.Refusal(limit)})
//	}
package msglimit

import (
	"crypto/rand"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Code is the JSON-RPC error code of a refusal: one of the codes JSON-RPC
// leaves to implementations. Refused does not trust it alone, since a
// server may send any code.
const Code = -32090

// token marks this process's refusals. It is never sent to a server, so a
// server cannot forge one.
var token = rand.Text()

// refusalData is a refusal's data member.
type refusalData struct {
	Refusal string `json:"heddle_refusal"`
	Limit   int    `json:"limit"`
}

// Refusal returns the error of the response a transport delivers in place
// of a message of more than limit bytes.
func Refusal(limit int) *jsonrpc.Error {
	data, _ := json.Marshal(refusalData{Refusal: token, Limit: limit})
	return &jsonrpc.Error{
		Code:    Code,
		Message: fmt.Sprintf("the server's message is larger than %d bytes and was not read", limit),
		Data:    data,
	}
}

// RefusalJSON returns, as one line of JSON, the JSON-RPC response a
// transport delivers in place of a message of more than limit bytes that
// answers the request id (its JSON: a number or a string).
func RefusalJSON(id json.RawMessage, limit int) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, Refusal(limit)})
	return b
}

// Refused reports whether err is, or wraps, a refusal made by this process,
// and the limit the refused message was over. It looks at every error err
// wraps: go-sdk wraps the failure of a request its transport refused in a
// JSON-RPC error of its own, which comes first.
func Refused(err error) (limit int, ok bool) {
	var d refusalData
	ok = walk(err, func(e error) bool {
		rpc, isRPC := e.(*jsonrpc.Error)
		d = refusalData{}
		return isRPC && rpc.Code == Code && json.Unmarshal(rpc.Data, &d) == nil && d.Refusal == token
	})
	return d.Limit, ok
}

// walk calls f on err and on every error it wraps, depth first, until f
// returns true.
func walk(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if walk(e, f) {
				return true
			}
		}
	}
	return false
}

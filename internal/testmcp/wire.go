package testmcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// BadNames are the tools [Options.BadNames] adds: names that model APIs
// refuse, which a client must rename to call.
var BadNames = []string{
	"has space",
	"slash/and.dot",
	"ünïcödé",
	strings.Repeat("long_", 60), // 300 characters
}

// DeepToolName is the tool [Options.DeepSchema] lists.
const DeepToolName = "deep"

// rewrites reports whether the server's messages go through rewrite on
// the wire.
func (s *server) rewrites() bool {
	o := s.opts
	return o.AnnotationShapes || o.Dribble > 0 || o.MalformedCalls || o.InvalidJSONCalls || o.DeepSchema > 0
}

// lineWriter is a lineWriter onto w with the server's rewrites.
func (s *server) lineWriter(w io.Writer) *lineWriter {
	l := &lineWriter{w: w, rewrite: s.rewrite}
	if s.opts.Dribble > 0 {
		l.write = s.dribble
	}
	return l
}

// rewrite is what the server's options make of one message on its way
// out.
func (s *server) rewrite(msg []byte) []byte {
	if s.opts.AnnotationShapes {
		msg = reshape(msg)
	}
	if s.opts.DeepSchema > 0 {
		// Spliced in as text: encoding/json refuses to write it.
		const list = `"tools":[`
		if i := bytes.Index(msg, []byte(list)); i >= 0 && bytes.Contains(msg, []byte(`"result"`)) {
			i += len(list)
			tool := append([]byte(`{"name":"`+DeepToolName+`","inputSchema":`), deepSchema(s.opts.DeepSchema)...)
			tool = append(tool, '}', ',')
			msg = append(msg[:i:i], append(tool, msg[i:]...)...)
		}
	}
	if s.opts.MalformedCalls || s.opts.InvalidJSONCalls {
		if id, ok := callResponseID(msg); ok {
			if s.opts.InvalidJSONCalls {
				return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"te`)
			}
			return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":"not an object"}`)
		}
	}
	return msg
}

// callResponseID returns the id of a message that answers a tools/call (a
// result with content), and whether it is one.
func callResponseID(msg []byte) (json.RawMessage, bool) {
	if !bytes.Contains(msg, []byte(`"content"`)) {
		return nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			Content json.RawMessage `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID == nil || m.Result == nil || m.Result.Content == nil {
		return nil, false
	}
	return m.ID, true
}

// deepSchema is an object schema whose property a nests n levels deep,
// written as text.
func deepSchema(n int) json.RawMessage {
	var b bytes.Buffer
	for range n {
		b.WriteString(`{"type":"object","properties":{"a":`)
	}
	b.WriteString(`{"type":"string"}`)
	for range n {
		b.WriteString(`}}`)
	}
	return b.Bytes()
}

// dribble writes the answer to the handshake (initialize, or
// server/discover) one byte at a time, the Dribble apart, and anything
// else at once.
func (s *server) dribble(w io.Writer, line []byte) error {
	handshake := bytes.Contains(line, []byte(`"protocolVersion"`)) || bytes.Contains(line, []byte(`"supportedVersions"`))
	if !handshake {
		_, err := w.Write(line)
		return err
	}
	for i := range line {
		if _, err := w.Write(line[i : i+1]); err != nil {
			return err
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		time.Sleep(s.opts.Dribble)
	}
	return nil
}

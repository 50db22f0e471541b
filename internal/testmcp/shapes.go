package testmcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AnnotationShapes are the tools [Options.AnnotationShapes] adds, by name,
// each with the annotations it is listed with, exactly as they go on the
// wire ("" means no annotations at all). go-sdk's servers always send
// readOnlyHint and idempotentHint (false when unset) since v1.7, so these
// are written into the tools/list results as they leave the server, over
// stdio, Streamable HTTP and SSE; in process ([NewServer]) the tools have
// no annotations.
var AnnotationShapes = map[string]string{
	"hints_none":                "",
	"hints_title":               `{"title":"Title only"}`,
	"hints_idempotent":          `{"idempotentHint":true}`,
	"hints_ro_absent_de_absent": `{}`,
	"hints_ro_absent_de_true":   `{"destructiveHint":true}`,
	"hints_ro_absent_de_false":  `{"destructiveHint":false}`,
	"hints_ro_true_de_absent":   `{"readOnlyHint":true}`,
	"hints_ro_true_de_true":     `{"readOnlyHint":true,"destructiveHint":true}`,
	"hints_ro_true_de_false":    `{"readOnlyHint":true,"destructiveHint":false}`,
	"hints_ro_false_de_absent":  `{"readOnlyHint":false}`,
	"hints_ro_false_de_true":    `{"readOnlyHint":false,"destructiveHint":true}`,
	"hints_ro_false_de_false":   `{"readOnlyHint":false,"destructiveHint":false}`,
	"hints_ro_null_de_null":     `{"readOnlyHint":null,"destructiveHint":null}`,
}

// addShapeTools adds the echoing tools of AnnotationShapes.
func (s *server) addShapeTools() {
	names := make([]string, 0, len(AnnotationShapes))
	for name := range AnnotationShapes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s.srv.AddTool(&mcp.Tool{Name: name, Description: "Listed with the annotations its name says.",
			InputSchema: map[string]any{"type": "object"}}, echoArguments)
	}
}

// reshape rewrites one JSON-RPC message: in a tools/list result, each tool
// of AnnotationShapes gets its annotations. Anything else is returned as
// it is.
func reshape(msg []byte) []byte {
	return reshapeTools(msg, func(tools []map[string]json.RawMessage) []map[string]json.RawMessage {
		for _, t := range tools {
			var name string
			_ = json.Unmarshal(t["name"], &name)
			shape, ok := AnnotationShapes[name]
			switch {
			case !ok:
			case shape == "":
				delete(t, "annotations")
			default:
				t["annotations"] = json.RawMessage(shape)
			}
		}
		return tools
	})
}

// reshapeTools rewrites the tools of a tools/list result with edit; any
// other message is returned as it is.
func reshapeTools(msg []byte, edit func([]map[string]json.RawMessage) []map[string]json.RawMessage) []byte {
	if !bytes.Contains(msg, []byte(`"tools"`)) {
		return msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["result"] == nil {
		return msg
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(m["result"], &res) != nil || res["tools"] == nil {
		return msg
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(res["tools"], &tools) != nil {
		return msg
	}
	tools = edit(tools)
	var err error
	if res["tools"], err = json.Marshal(tools); err != nil {
		return msg
	}
	if m["result"], err = json.Marshal(res); err != nil {
		return msg
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// reshapeLine rewrites one line of a stdio stream (a message) or of an
// event stream ("data: " and a message) with rewrite.
func reshapeLine(line []byte, rewrite func([]byte) []byte) []byte {
	if rest, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
		return append([]byte("data: "), rewrite(rest)...)
	}
	if bytes.HasPrefix(line, []byte("{")) {
		return rewrite(line)
	}
	return line
}

// lineWriter writes what it is given line by line, each rewritten by
// reshapeLine with rewrite, and written by write (w.Write when nil);
// flush writes a last line without its newline.
type lineWriter struct {
	mu      sync.Mutex
	w       io.Writer
	buf     []byte
	rewrite func([]byte) []byte
	write   func(w io.Writer, line []byte) error
}

// out writes one rewritten line.
func (l *lineWriter) out(line []byte) error {
	if l.write != nil {
		return l.write(l.w, line)
	}
	_, err := l.w.Write(line)
	return err
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		out := append(reshapeLine(l.buf[:i:i], l.rewrite), '\n')
		l.buf = l.buf[i+1:]
		if err := l.out(out); err != nil {
			return 0, err
		}
	}
}

func (l *lineWriter) flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return nil
	}
	err := l.out(reshapeLine(l.buf, l.rewrite))
	l.buf = nil
	return err
}

// stdoutCloser is os.Stdout through a lineWriter, for IOTransport.
type stdoutCloser struct {
	*lineWriter
	c io.Closer
}

func (s stdoutCloser) Close() error { return s.c.Close() }

// reshaping serves h with every response body written through a
// lineWriter of the server's.
func (s *server) reshaping(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &reshapeWriter{ResponseWriter: w}
		rw.lw = s.lineWriter(w)
		h.ServeHTTP(rw, r)
		_ = rw.lw.flush()
	})
}

// reshapeWriter is a ResponseWriter whose body goes through a lineWriter;
// the length of a body it rewrites changes, so it drops Content-Length.
type reshapeWriter struct {
	http.ResponseWriter
	lw *lineWriter
}

func (w *reshapeWriter) WriteHeader(code int) {
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(code)
}

func (w *reshapeWriter) Write(p []byte) (int, error) {
	w.Header().Del("Content-Length")
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		return w.lw.Write(p)
	}
	w.lw.mu.Lock()
	w.lw.buf = append(w.lw.buf, p...) // one message: rewritten whole at the end
	w.lw.mu.Unlock()
	return len(p), nil
}

// Flush hands on the complete lines written so far.
func (w *reshapeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// stdioWriter is the stdio server's output.
func (s *server) stdioWriter(w io.WriteCloser) io.WriteCloser {
	if !s.rewrites() {
		return w
	}
	return stdoutCloser{lineWriter: s.lineWriter(w), c: w}
}

package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// stdioTransport runs a stdio server's process and speaks MCP's stdio
// framing with it: one JSON-RPC message (or batch) per line, in both
// directions. It stands in for go-sdk's CommandTransport, whose reader
// decodes every line twice (as a batch, then as a message), each time with
// a new streaming decoder and its fresh 32 KB buffer, and hands each message
// to Read through another goroutine. This one reads lines straight from the
// pipe in Read and decodes each once with the parser go-sdk's decoder is
// built on (segmentio's), under the same rules: the same messages, a
// fraction of the garbage, one goroutine hand-off fewer per message. Shutdown follows the MCP specification as
// CommandTransport does: close the child's stdin, wait, SIGTERM, wait,
// SIGKILL.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration // each wait of the shutdown
}

// maxFrame is the longest line a server may send: go-sdk's
// DefaultMaxLineLength.
const maxFrame = mcp.DefaultMaxLineLength

// Connect starts the process.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	return &stdioConn{
		cmd:       t.cmd,
		stdin:     stdin,
		in:        bufio.NewReaderSize(stdout, 64<<10),
		terminate: t.terminate,
		closed:    make(chan struct{}),
	}, nil
}

// stdioConn is one connection to a stdio server.
type stdioConn struct {
	cmd       *exec.Cmd
	terminate time.Duration

	readMu sync.Mutex // Read is called from one goroutine; the lock keeps it honest
	in     *bufio.Reader
	queue  []jsonrpc.Message // the rest of a batch
	line   []byte            // a line longer than in's buffer, reassembled

	writeMu sync.Mutex
	stdin   io.WriteCloser
	out     []byte

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

// Read returns the next message. Close unblocks it: the process exits and
// the pipe closes.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		line, err := c.readLine()
		if err != nil {
			select {
			case <-c.closed:
				return nil, io.EOF
			default:
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
				return nil, io.EOF
			}
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '[' {
			return decodeMessage(line)
		}
		var batch []json.RawMessage
		if err := parse(line, &batch); err != nil {
			return nil, fmt.Errorf("reading a batch from the server: %w", err)
		}
		if len(batch) == 0 {
			return nil, errors.New("the server sent an empty batch")
		}
		msgs := make([]jsonrpc.Message, len(batch))
		for i, raw := range batch {
			if msgs[i], err = decodeMessage(raw); err != nil {
				return nil, err
			}
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// readLine returns the next line without its newline. The slice is valid
// until the next call.
func (c *stdioConn) readLine() ([]byte, error) {
	b, err := c.in.ReadSlice('\n')
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(b) > 0 && errors.Is(err, io.EOF) {
			return b, nil // a last line without its newline
		}
		return nil, err
	}
	c.line = append(c.line[:0], b...)
	for {
		b, err = c.in.ReadSlice('\n')
		if len(c.line)+len(b) > maxFrame {
			return nil, fmt.Errorf("the server sent a message longer than %d bytes", maxFrame)
		}
		c.line = append(c.line, b...)
		switch {
		case err == nil:
			return c.line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(c.line) > 0:
			return c.line, nil
		default:
			return nil, err
		}
	}
}

// Write sends one message as one line.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.out = append(append(c.out[:0], data...), '\n')
	_, err = c.stdin.Write(c.out)
	if len(c.out) > 64<<10 {
		c.out = nil // do not keep a large message's buffer
	}
	return err
}

// Close shuts the server down as the MCP specification asks: close its
// stdin, wait for it to exit, then SIGTERM, then SIGKILL. It is safe to call
// more than once and concurrently.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		// Not under writeMu: a Write blocked on a child that stopped
		// reading holds it, and closing the pipe is what ends that Write.
		if err := c.stdin.Close(); err != nil {
			_ = c.cmd.Process.Kill()
		}
		exited := make(chan error, 1)
		go func() { exited <- c.cmd.Wait() }()
		wait := func() (error, bool) {
			t := time.NewTimer(c.terminate)
			defer t.Stop()
			select {
			case err := <-exited:
				return err, true
			case <-t.C:
				return nil, false
			}
		}
		if err, ok := wait(); ok {
			c.closeErr = exitErr(err)
			return
		}
		if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
			if err, ok := wait(); ok {
				c.closeErr = exitErr(err)
				return
			}
		}
		_ = c.cmd.Process.Kill()
		if err, ok := wait(); ok {
			c.closeErr = exitErr(err)
			return
		}
		c.closeErr = errors.New("the server's process did not exit")
	})
	return c.closeErr
}

// exitErr is what Close reports of a process's exit: nothing for a process
// that exited or was stopped by the shutdown's signals.
func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

// SessionID is empty: stdio has no sessions.
func (c *stdioConn) SessionID() string { return "" }

// wireMessage is a JSON-RPC message as it travels.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// maxDepth is the deepest nesting of objects and arrays a message may have:
// go-sdk's limit. The decoder recurses, so a deeper line must not reach it.
const maxDepth = 1000

// parse decodes data into v with keys matched exactly, as go-sdk matches
// them (a "Method" is not a "method"), and nothing after the value.
func parse(data []byte, v any) error {
	if tooDeep(data, maxDepth) {
		return fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	rest, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(rest) > 0 {
		err = errors.New("data after the message")
	}
	return err
}

// tooDeep reports whether the objects and arrays of data, outside strings,
// nest deeper than limit.
func tooDeep(data []byte, limit int) bool {
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

// decodeMessage decodes one JSON-RPC message as go-sdk's DecodeMessage does:
// a "method" makes it a request (a notification when it has no id), else it
// is a response, which must have an id.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := parse(data, &w); err != nil {
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
		if err := parse(w.Method, &method); err != nil {
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

var _ mcp.Transport = (*stdioTransport)(nil)

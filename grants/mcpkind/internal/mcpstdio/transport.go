// Package mcpstdio is heddle's MCP stdio transport: it runs a server's
// process and speaks MCP's stdio framing with it, one JSON-RPC message (or
// batch) per line in each direction, as a go-sdk mcp.Transport.
//
// It stands in for go-sdk's mcp.CommandTransport because it pays: go-sdk's
// reader decodes every line twice (as a batch, then as a message), each
// time with a new streaming decoder and its fresh 32 KB buffer, and hands
// each message to Read through another goroutine. This one reads lines
// straight from the pipe in Read and decodes each once with the parser
// go-sdk's decoder is built on (segmentio's), under the same rules
// (decode_test.go and FuzzDecodeMessage compare the two). Measured in the
// same run (BenchmarkRoundTrip: one tools/call result written to cat and
// read back, medians of six runs on two shared cores), it allocates 0.6 KB
// per message instead of go-sdk's 65 KB (about 100× fewer bytes, 8
// allocations instead of 20) and takes a sixth of the time; decoding alone
// (BenchmarkDecode) allocates 0.3 KB instead of 32 KB and is 8× faster. A
// whole stdio call through heddle allocates 0.53× what a raw go-sdk call
// does (BenchmarkCall/stdio in package runtime, docs/performance.md).
//
// A line is bounded (Options.MaxMessageBytes) as it is read, not after: one
// longer than the bound is read through in the reader's own buffer and
// dropped, and each call it answers is answered by a msglimit.Refusal, its
// id found as the line passes (msglimit.Scanner). The connection goes on,
// where go-sdk's reader ends it at its bound; reading a 64 MiB line costs
// the reader what it buffered up to the bound, once
// (TestStdioConnOversizedMemory).
//
// Usage:
//
//	cmd := childproc.Command("mcp-server-git", nil, env, "", stderr)
//	sess, err := client.Connect(ctx, mcpstdio.NewTransport(cmd, nil), nil)
package mcpstdio

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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/childproc"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/jsonmsg"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
)

// Options configures a transport. A nil *Options is the zero value.
type Options struct {
	// Terminate is how long Close waits at each step of a server's shutdown
	// (stdin closed, then SIGTERM, then SIGKILL) before taking the next.
	// Zero means 5 seconds, as go-sdk's CommandTransport.
	Terminate time.Duration

	// MaxMessageBytes bounds one line from the server. A longer line is not
	// held: once it passes the bound the rest of it is read and dropped, and
	// each call it answers gets a msglimit.Refusal in its place, while the
	// connection and its other calls go on. A request or notification that
	// long is dropped. Zero means 16 MiB, go-sdk's DefaultMaxLineLength.
	MaxMessageBytes int
}

// NewTransport returns a transport that starts cmd, a command not yet
// started, on Connect, and speaks MCP's stdio framing with it over its stdin
// and stdout. Connect may be called once: a transport runs one process.
// Shutdown follows the MCP specification as CommandTransport does: close
// the child's stdin, wait, SIGTERM, wait, SIGKILL.
func NewTransport(cmd *exec.Cmd, opts *Options) mcp.Transport {
	t := &transport{cmd: cmd, terminate: 5 * time.Second, maxFrame: defaultMaxFrame}
	if opts != nil && opts.Terminate > 0 {
		t.terminate = opts.Terminate
	}
	if opts != nil && opts.MaxMessageBytes > 0 {
		t.maxFrame = opts.MaxMessageBytes
	}
	return t
}

type transport struct {
	cmd       *exec.Cmd
	terminate time.Duration // each wait of the shutdown
	maxFrame  int           // the longest line read
}

// defaultMaxFrame is the longest line a server may send when Options do not
// say: go-sdk's DefaultMaxLineLength.
const defaultMaxFrame = mcp.DefaultMaxLineLength

// Connect starts the process.
func (t *transport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := childproc.Start(t.cmd); err != nil {
		return nil, err
	}
	return &conn{
		cmd:       t.cmd,
		stdin:     stdin,
		in:        bufio.NewReaderSize(stdout, 64<<10),
		maxFrame:  t.maxFrame,
		terminate: t.terminate,
		closed:    make(chan struct{}),
	}, nil
}

// conn is one connection to a stdio server. Read is called from one
// goroutine at a time, Write from any number, Close from any, more than once.
type conn struct {
	cmd       *exec.Cmd
	terminate time.Duration

	readMu   sync.Mutex // Read is called from one goroutine; the lock keeps it honest
	in       *bufio.Reader
	maxFrame int
	queue    []jsonrpc.Message // the rest of a batch, or refusals of a line over maxFrame
	long     msglimit.Buffer   // a line longer than in's buffer, gathered
	line     []byte            // the same line, joined

	writeMu sync.Mutex
	stdin   io.WriteCloser
	out     []byte

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}

	// spoke is set once a message from the server has been read: until
	// then Close has nothing to wait for (a server that never answered
	// its handshake has nothing to flush) and kills its process group at
	// once, so that a hanging server does not hold start-up for the
	// shutdown's waits.
	spoke atomic.Bool
}

// Read returns the next message. Close unblocks it: the process exits and
// the pipe closes.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
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
		line, refusals, err := c.readLine()
		if len(refusals) > 0 {
			c.queue = refusals[1:]
			return refusals[0], nil
		}
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
		if jsonmsg.TooDeep(line, jsonmsg.MaxDepth) {
			// Not decoded (the decoder recurses): each response in it
			// is answered by a refusal, and the connection goes on.
			if refusals := jsonmsg.DeepRefusals(line); len(refusals) > 0 {
				c.spoke.Store(true)
				c.queue = refusals[1:]
				return refusals[0], nil
			}
			continue // a request or notification: dropped
		}
		if line[0] != '[' {
			m, err := jsonmsg.Decode(line)
			if err == nil {
				c.spoke.Store(true)
			}
			return m, err
		}
		var batch []json.RawMessage
		if err := jsonmsg.Parse(line, &batch); err != nil {
			return nil, fmt.Errorf("reading a batch from the server: %w", err)
		}
		if len(batch) == 0 {
			return nil, errors.New("the server sent an empty batch")
		}
		msgs := make([]jsonrpc.Message, len(batch))
		for i, raw := range batch {
			if msgs[i], err = jsonmsg.Decode(raw); err != nil {
				return nil, err
			}
		}
		c.spoke.Store(true)
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// readLine returns the next line without its newline. The slice is valid
// until the next call. A line over maxFrame is read through and dropped,
// and readLine returns the refusals that answer in its place instead.
func (c *conn) readLine() ([]byte, []jsonrpc.Message, error) {
	b, err := c.in.ReadSlice('\n')
	if len(b) > c.maxFrame { // a bound smaller than the buffer
		return c.skipLine(b, err)
	}
	if err == nil {
		return b, nil, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(b) > 0 && errors.Is(err, io.EOF) {
			return b, nil, nil // a last line without its newline
		}
		return nil, nil, err
	}
	// Longer than the buffer: gather it in chunks, which never copy
	// themselves as the line grows, and join them once it is whole. Both
	// are kept for the next long line up to 1 MiB.
	if cap(c.line) > 1<<20 {
		c.line = nil
	}
	c.long.Reset()
	c.long.Write(b)
	for {
		b, err = c.in.ReadSlice('\n')
		if c.long.Len()+len(b) > c.maxFrame {
			return c.skipLine(b, err)
		}
		c.long.Write(b)
		switch {
		case err == nil, errors.Is(err, io.EOF) && c.long.Len() > 0:
			c.line = c.long.AppendTo(c.line[:0])
			c.long.Reset()
			return c.line, nil, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, nil, err
		}
	}
}

// skipLine reads the rest of a line over maxFrame without keeping it, given
// the part read so far (in c.long, then b, which ReadSlice returned with
// err), and returns a refusal for each response the line holds: the id of
// each is found as the line passes, wherever it is in the line.
func (c *conn) skipLine(b []byte, err error) ([]byte, []jsonrpc.Message, error) {
	var scan msglimit.Scanner
	c.long.WriteTo(&scan)
	c.long.Reset()
	scan.Write(b)
	for errors.Is(err, bufio.ErrBufferFull) {
		b, err = c.in.ReadSlice('\n')
		scan.Write(b)
	}
	var refusals []jsonrpc.Message
	for _, id := range scan.Responses() {
		refusals = append(refusals, &jsonrpc.Response{ID: id, Error: msglimit.Refusal(c.maxFrame)})
	}
	if errors.Is(err, io.EOF) {
		err = nil // the line is over; the next read meets the end
	}
	return nil, refusals, err
}

// Write sends one message as one line.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
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
// stdin, wait for it to exit, then SIGTERM, then SIGKILL. A server that has
// not sent one message is killed at once, with its process group. It is
// safe to call more than once and concurrently.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if !c.spoke.Load() {
			childproc.KillGroup(c.cmd)
			_ = c.cmd.Process.Kill() // a command not started in a group of its own
		}
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
func (c *conn) SessionID() string { return "" }

var (
	_ mcp.Transport  = (*transport)(nil)
	_ mcp.Connection = (*conn)(nil)
)

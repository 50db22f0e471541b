package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// nodeWorker is the TypeScript SDK's side: one node process running
// ts/bench.mjs, which takes one JSON command a line on stdin and answers
// each with one JSON line on stdout. It makes its loads and measures them
// itself (its latencies, its wall time, process.cpuUsage()), so that the
// pipe between the two processes is not in its numbers.
type nodeWorker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	exited chan struct{}

	mu     sync.Mutex // one command at a time
	nextID int
	broken error // set once a command failed to answer; the worker is then killed

	node, sdk string // their versions
	protocol  string // the protocol version the SDK asks for
	warnings  *warningCounter
}

// startNode starts node on script with the GC exposed (held-session
// memory is measured after a collection).
func startNode(script string) (*nodeWorker, error) {
	cmd := exec.Command("node", "--expose-gc", filepath.Base(script))
	cmd.Dir = filepath.Dir(script)
	warnings := &warningCounter{out: os.Stderr}
	cmd.Stderr = warnings
	stdin, stdout, err := startPiped(cmd)
	if err != nil {
		return nil, err
	}
	w := &nodeWorker{cmd: cmd, stdin: stdin, lines: make(chan []byte, 1), exited: make(chan struct{}), warnings: warnings}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			w.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(w.lines)
		_ = cmd.Wait()
		close(w.exited)
	}()
	var v struct{ Node, SDK, Protocol string }
	if err := w.do(context.Background(), 30*time.Second, map[string]any{"op": "hello"}, &v); err != nil {
		w.stop()
		return nil, fmt.Errorf("node worker: %w", err)
	}
	w.node, w.sdk, w.protocol = v.Node, v.SDK, v.Protocol
	return w, nil
}

// do sends cmd and decodes the answer into out, waiting at most timeout.
// An answer with "error" is an error; no answer in time kills the worker.
func (w *nodeWorker) do(ctx context.Context, timeout time.Duration, cmd map[string]any, out any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		return w.broken
	}
	w.nextID++
	cmd["id"] = w.nextID
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	if _, err := w.stdin.Write(append(b, '\n')); err != nil {
		return w.fail(fmt.Errorf("writing to node: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case line, ok := <-w.lines:
		if !ok {
			return w.fail(errors.New("node exited"))
		}
		var a struct {
			ID    int    `json:"id"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(line, &a); err != nil {
			return w.fail(fmt.Errorf("node answered %q: %w", line, err))
		}
		if a.ID != w.nextID {
			return w.fail(fmt.Errorf("node answered command %d, not %d", a.ID, w.nextID))
		}
		if a.Error != "" {
			return errors.New(a.Error)
		}
		return json.Unmarshal(line, out)
	case <-ctx.Done():
		return w.fail(fmt.Errorf("node did not answer %v within %v", cmd["op"], timeout))
	}
}

// fail records err as the worker's end and kills it.
func (w *nodeWorker) fail(err error) error {
	w.broken = err
	killGroup(w.cmd)
	return err
}

// stop ends the worker: stdin closed, then its process group killed.
func (w *nodeWorker) stop() {
	_ = w.stdin.Close()
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
	}
	killGroup(w.cmd)
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(os.Stderr, "bench-compare: node was not reaped within 5s")
	}
}

// nodeClient is one TypeScript SDK client, held by the worker under id.
type nodeClient struct {
	w  *nodeWorker
	id string
}

// nodeTarget is t as the worker's commands name it.
func nodeTarget(t target) map[string]any {
	if t.stdio() {
		return map[string]any{"transport": "stdio", "command": t.bin}
	}
	return map[string]any{"transport": "http", "url": t.url}
}

// openNode returns the opener of TypeScript SDK clients on w.
func openNode(w *nodeWorker) func(ctx context.Context, t target) (client, error) {
	var n int
	return func(ctx context.Context, t target) (client, error) {
		n++
		c := &nodeClient{w: w, id: fmt.Sprintf("c%d", n)}
		cmd := nodeTarget(t)
		cmd["op"], cmd["client"] = "open", c.id
		if err := w.do(ctx, 60*time.Second, cmd, &struct{}{}); err != nil {
			return nil, fmt.Errorf("ts-sdk: %w", err)
		}
		return c, nil
	}
}

// nodeSample is the worker's answer to run.
type nodeSample struct {
	P50US         float64 `json:"p50_us"`
	CallsPerSec   float64 `json:"calls_per_s"`
	CPUUSPerCall  float64 `json:"cpu_us_per_call"`
	BytesPerCall  any     `json:"bytes_per_call"`  // "n/a"
	AllocsPerCall any     `json:"allocs_per_call"` // "n/a"
}

func (c *nodeClient) turn(ctx context.Context, l load) (sample, error) {
	var s nodeSample
	err := c.w.do(ctx, turnTimeout(l), map[string]any{
		"op": "run", "client": c.id, "tool": l.tool, "args": l.args, "calls": l.calls, "callers": l.callers,
	}, &s)
	if err != nil {
		return sample{}, fmt.Errorf("ts-sdk: %w", err)
	}
	return sample{p50: s.P50US / 1e6, callsPerSec: s.CallsPerSec, cpuPerCall: s.CPUUSPerCall / 1e6, bytesPer: nan, allocsPer: nan}, nil
}

func (c *nodeClient) close() error {
	return c.w.do(context.Background(), 30*time.Second, map[string]any{"op": "close", "client": c.id}, &struct{}{})
}

// listenerWarning is the warning node prints each time one more listener is
// added to an event target past its limit (1,500 for an AbortSignal). The
// TypeScript SDK's Streamable HTTP client hands its transport's AbortSignal
// to every fetch; node's fetch (undici) adds an abort listener to it for each
// request and removes it only when the request is garbage-collected, so that
// with many calls between collections node prints this once a call.
const listenerWarning = "MaxListenersExceededWarning"

// warningCounter passes node's stderr on to out, but counts the lines of
// listenerWarning rather than passing thousands of them on; the legend
// says how many there were.
type warningCounter struct {
	mu      sync.Mutex
	out     io.Writer
	partial []byte
	count   int
}

func (w *warningCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := w.partial[:i+1]
		if bytes.Contains(line, []byte(listenerWarning)) {
			w.count++
		} else {
			_, _ = w.out.Write(line)
		}
		w.partial = w.partial[i+1:]
	}
}

// listenerWarnings is how many listenerWarning lines node has printed.
func (w *warningCounter) listenerWarnings() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

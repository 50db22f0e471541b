package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// The minimal client is the floor of the comparison, as the minimal
// net/http door is the invoke API's: the least a Go program can do to call
// a tool over the same wire, with no MCP library. It speaks 2025-11-25
// (no _meta on its requests), sends initialize and
// notifications/initialized, then for each call writes one tools/call and
// decodes its answer with encoding/json far enough to tell a result from an
// error; it checks nothing else. Over stdio it writes lines to the
// server's stdin under a lock and one goroutine reads its stdout, handing
// each response to the call waiting for its id; over Streamable HTTP each
// call is one POST, its answer read as JSON or as an event stream, on the
// same pooled HTTP client as raw go-sdk's.

// minimalClient is the minimal client's name in the table.
const minimalClient = "minimal (no MCP library)"

// minimalProtocol is the revision the minimal client asks for.
const minimalProtocol = "2025-11-25"

// maxMinimalLine bounds a message the minimal client reads.
const maxMinimalLine = 1 << 20

// minimalAnswer is what the minimal client decodes of a response.
type minimalAnswer struct {
	ID     *int64 `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// err is the answer's failure: a JSON-RPC error, a tool error, or none.
func (a *minimalAnswer) err() error {
	switch {
	case a.Error != nil:
		return fmt.Errorf("error %d: %s", a.Error.Code, a.Error.Message)
	case a.Result == nil:
		return errors.New("a response with neither result nor error")
	case a.Result.IsError:
		return errors.New("tool error")
	}
	return nil
}

// minimalRequest is a request's line; id < 0 makes it a notification.
func minimalRequest(id int64, method string, params any) ([]byte, error) {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id >= 0 {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	return json.Marshal(m)
}

func initializeParams() map[string]any {
	return map[string]any{
		"protocolVersion": minimalProtocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "bench-minimal", "version": "0"},
	}
}

// minimalRequester sends a request and returns its response: the minimal
// client's session over stdio or HTTP.
type minimalRequester interface {
	request(ctx context.Context, method string, params any) (minimalAnswer, error)
}

// minimalCall is a call of a tool over c: an error unless it is answered
// with a result that is not a tool error.
func minimalCall(c minimalRequester) callFunc {
	return func(ctx context.Context, tool string, args map[string]any) error {
		a, err := c.request(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
		if err != nil {
			return err
		}
		return a.err()
	}
}

func openMinimal(ctx context.Context, t target) (client, error) {
	if t.stdio() {
		return openMinimalStdio(ctx, t)
	}
	return openMinimalHTTP(ctx, t)
}

// minimalStdio is the minimal client's connection to a stdio server.
type minimalStdio struct {
	stdin io.WriteCloser
	wmu   sync.Mutex
	next  atomic.Int64

	mu      sync.Mutex
	waiting map[int64]chan minimalAnswer
	readErr error // set once reading stopped
	done    chan struct{}
}

func openMinimalStdio(ctx context.Context, t target) (client, error) {
	cmd := exec.Command(t.bin)
	stdin, stdout, err := startPiped(cmd)
	if err != nil {
		return nil, err
	}
	c := &minimalStdio{stdin: stdin, waiting: map[int64]chan minimalAnswer{}, done: make(chan struct{})}
	go c.read(stdout)
	// Closing stdin ends the server; one that lingers is killed.
	closeAll := func() error {
		stdin.Close()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			killGroup(cmd)
		}
		<-c.done
		return cmd.Wait()
	}
	if err := c.handshake(ctx); err != nil {
		killGroup(cmd)
		_ = closeAll()
		return nil, fmt.Errorf("minimal client over stdio: %w", err)
	}
	return inProcess{goClient{call: minimalCall(c), proto: minimalProtocol, close: closeAll}}, nil
}

func (c *minimalStdio) handshake(ctx context.Context) error {
	a, err := c.request(ctx, "initialize", initializeParams())
	if err != nil {
		return err
	}
	if a.Error != nil {
		return a.err()
	}
	line, err := minimalRequest(-1, "notifications/initialized", nil)
	if err != nil {
		return err
	}
	return c.write(line)
}

func (c *minimalStdio) write(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.stdin.Write(append(line, '\n'))
	return err
}

// request sends a request and waits for its response.
func (c *minimalStdio) request(ctx context.Context, method string, params any) (minimalAnswer, error) {
	id := c.next.Add(1)
	line, err := minimalRequest(id, method, params)
	if err != nil {
		return minimalAnswer{}, err
	}
	ch := make(chan minimalAnswer, 1)
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return minimalAnswer{}, c.readErr
	}
	c.waiting[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	if err := c.write(line); err != nil {
		return minimalAnswer{}, err
	}
	select {
	case a, ok := <-ch:
		if !ok {
			return minimalAnswer{}, c.readErr
		}
		return a, nil
	case <-ctx.Done():
		return minimalAnswer{}, ctx.Err()
	}
}

// read hands each response the server writes to the call waiting for it,
// until the server's stdout ends; then it fails the calls still waiting.
func (c *minimalStdio) read(stdout io.Reader) {
	defer close(c.done)
	sc := lines(stdout)
	for sc.Scan() {
		line := sc.Bytes()
		var a minimalAnswer
		if json.Unmarshal(line, &a) != nil || a.ID == nil {
			continue // a notification, or a request of the server's
		}
		c.mu.Lock()
		ch := c.waiting[*a.ID]
		delete(c.waiting, *a.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readErr = fmt.Errorf("reading the server's stdout: %w", err)
	for id, ch := range c.waiting {
		close(ch)
		delete(c.waiting, id)
	}
}

// lines reads r line by line, each line at most maxMinimalLine bytes.
func lines(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxMinimalLine)
	return sc
}

// minimalHTTP is the minimal client's session with a Streamable HTTP
// server.
type minimalHTTP struct {
	url     string
	hc      *http.Client
	session string
	next    atomic.Int64
}

func openMinimalHTTP(ctx context.Context, t target) (client, error) {
	hc, closeIdle := pooledHTTPClient()
	c := &minimalHTTP{url: t.url, hc: hc}
	if err := c.handshake(ctx); err != nil {
		closeIdle()
		return nil, fmt.Errorf("minimal client over HTTP: %w", err)
	}
	closeSession := func() error {
		defer closeIdle()
		req, err := http.NewRequest(http.MethodDelete, c.url, nil)
		if err != nil {
			return err
		}
		c.headers(req)
		resp, err := c.hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	return inProcess{goClient{call: minimalCall(c), proto: minimalProtocol, close: closeSession}}, nil
}

func (c *minimalHTTP) headers(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", minimalProtocol)
	}
}

func (c *minimalHTTP) handshake(ctx context.Context) error {
	a, resp, err := c.post(ctx, c.next.Add(1), "initialize", initializeParams())
	if err != nil {
		return err
	}
	if a.Error != nil {
		return a.err()
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	_, _, err = c.post(ctx, -1, "notifications/initialized", nil)
	return err
}

// request sends a request and reads its response from the answer.
func (c *minimalHTTP) request(ctx context.Context, method string, params any) (minimalAnswer, error) {
	a, _, err := c.post(ctx, c.next.Add(1), method, params)
	return a, err
}

// post sends one message and reads the response to id from the answer, a
// JSON body or an event stream; a notification's answer is only checked
// for its status.
func (c *minimalHTTP) post(ctx context.Context, id int64, method string, params any) (minimalAnswer, *http.Response, error) {
	body, err := minimalRequest(id, method, params)
	if err != nil {
		return minimalAnswer{}, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return minimalAnswer{}, nil, err
	}
	c.headers(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return minimalAnswer{}, nil, err
	}
	// Read to its end, so that the connection goes back to the pool: an
	// event stream ends after the response, often in a later read.
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMinimalLine))
		resp.Body.Close()
	}()
	if resp.StatusCode/100 != 2 {
		return minimalAnswer{}, resp, fmt.Errorf("%s: status %s", method, resp.Status)
	}
	if id < 0 {
		return minimalAnswer{}, resp, nil
	}
	a, err := readAnswer(resp, id)
	return a, resp, err
}

// readAnswer reads the response to id from resp's body.
func readAnswer(resp *http.Response, id int64) (minimalAnswer, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	body := io.LimitReader(resp.Body, maxMinimalLine)
	if ct == "application/json" {
		var a minimalAnswer
		if err := json.NewDecoder(body).Decode(&a); err != nil {
			return a, err
		}
		if a.ID == nil || *a.ID != id {
			return a, errors.New("the answer is not the response to the request")
		}
		return a, nil
	}
	sc := lines(body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		var a minimalAnswer
		if json.Unmarshal(data, &a) == nil && a.ID != nil && *a.ID == id {
			return a, nil
		}
	}
	return minimalAnswer{}, fmt.Errorf("the event stream ended without the response (%v)", sc.Err())
}

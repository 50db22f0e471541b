package a2alive

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/heddlehq/heddle/diag"
)

// The A2A JSON-RPC binding, as much of it as one message needs: SendMessage
// and GetTask of A2A 1.0, and message/send and tasks/get of A2A 0.3.

const (
	versionHeader = "A2A-Version"
	version1      = "1.0"
	version03     = "0.3"

	// maxResponseBytes caps one JSON-RPC response read from an agent.
	maxResponseBytes = 4 << 20
	// maxErrorText caps an agent's error message shown to the model.
	maxErrorText = 500
)

// Poll interval bounds while a task runs.
var (
	pollFirst = 50 * time.Millisecond
	pollMax   = time.Second
)

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// message is an A2A message in either version's JSON form (0.3 adds kind
// fields and writes roles in lower case).
type message struct {
	Kind      string `json:"kind,omitempty"`
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
	Parts     []part `json:"parts"`
}

// part is one part of a message or artifact: 1.0 tells them apart by which
// field is set, 0.3 by kind.
type part struct {
	Kind      string          `json:"kind,omitempty"`
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       string          `json:"raw,omitempty"`
	File      json.RawMessage `json:"file,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

type task struct {
	Kind   string `json:"kind,omitempty"`
	ID     string `json:"id"`
	Status struct {
		State   string   `json:"state"`
		Message *message `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Parts []part `json:"parts"`
	} `json:"artifacts"`
}

// answer is what a call tells the model.
type answer struct {
	text    string
	isError bool
}

// unreachableError is a call that did not reach the agent (or whose answer
// did not come back): the agent is treated as down.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return "the remote agent could not be reached" }
func (e *unreachableError) Unwrap() error { return e.err }

// connectionLost reports a read of an answer that ended because the
// connection did: reset, or closed before the answer was whole.
func connectionLost(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// send sends text as one message and returns the agent's answer, polling
// its task until it ends. Errors are rpc's; everything the agent says,
// errors included, is an answer.
func (a *remote) send(ctx context.Context, ep *endpoint, text string) (answer, error) {
	msg := message{MessageID: newMessageID(), Role: "ROLE_USER", Parts: []part{{Text: &text}}}
	method, params := "SendMessage", map[string]any{"message": &msg}
	if ep.legacy {
		msg.Kind, msg.Role, msg.Parts[0].Kind = "message", "user", "text"
		method = "message/send"
	} else if ep.tenant != "" {
		params["tenant"] = ep.tenant
	}
	raw, ans, err := a.rpc(ctx, ep, method, params)
	if err != nil || ans != nil {
		return deref(ans), err
	}
	m, t, err := decodeSendResult(raw, ep.legacy)
	if err != nil {
		return answer{text: "the remote agent's answer could not be read: " + err.Error(), isError: true}, nil
	}
	if m != nil {
		return answer{text: partsText(m.Parts)}, nil
	}
	delay := pollFirst
	for {
		if ans, done := taskAnswer(t); done {
			return ans, nil
		}
		if t.ID == "" {
			return answer{text: "the remote agent answered with a running task that has no id", isError: true}, nil
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return answer{}, ctx.Err()
		case <-timer.C:
		}
		delay = min(delay*2, pollMax)
		method, params := "GetTask", map[string]any{"id": t.ID}
		if ep.legacy {
			method = "tasks/get"
		} else if ep.tenant != "" {
			params["tenant"] = ep.tenant
		}
		raw, ans, err := a.rpc(ctx, ep, method, params)
		if err != nil || ans != nil {
			return deref(ans), err
		}
		t = &task{}
		if err := json.Unmarshal(raw, t); err != nil {
			return answer{text: "the remote agent's task could not be read", isError: true}, nil
		}
	}
}

func deref(a *answer) answer {
	if a == nil {
		return answer{}
	}
	return *a
}

// rpc makes one JSON-RPC call. It returns the result; or an answer for the
// model when the agent answered with an error; or an error when the call
// did not complete: the context's, *unreachableError (nothing answered, the
// connection broke, or a 502 or 503 said the agent cannot be reached), or
// TRANSPORT_TIMEOUT for a gateway's 504.
func (a *remote) rpc(ctx context.Context, ep *endpoint, method string, params any) (_ json.RawMessage, ans *answer, err error) {
	id := a.ids.Add(1)
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	span := a.startRPC(ctx, req, ep, method, id)
	defer func() { endRPC(span, ans, err) }()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if ep.legacy {
		req.Header.Set(versionHeader, version03)
	} else {
		req.Header.Set(versionHeader, version1)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, &unreachableError{err}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, &answer{text: fmt.Sprintf("the remote agent %s refused heddle's credentials (HTTP %d)", a.name, resp.StatusCode), isError: true}, nil
	case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, nil, &unreachableError{fmt.Errorf("HTTP %d", resp.StatusCode)}
	case resp.StatusCode == http.StatusGatewayTimeout:
		// A gateway that gave up waiting: the agent may be slow, not gone.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, nil, diag.New(diag.TransportTimeout, "a gateway in front of the remote agent %s gave up waiting for it (HTTP 504); you may retry", a.name)
	case resp.StatusCode != http.StatusOK:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, &answer{text: fmt.Sprintf("the remote agent %s answered HTTP %d", a.name, resp.StatusCode), isError: true}, nil
	}
	var r rpcResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(&r); err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if connectionLost(err) { // the answer was cut off: the agent went away
			return nil, nil, &unreachableError{err}
		}
		return nil, &answer{text: fmt.Sprintf("the remote agent %s sent an answer that is not JSON-RPC (or larger than %d bytes)", a.name, maxResponseBytes), isError: true}, nil
	}
	if r.JSONRPC != "2.0" || string(r.ID) != fmt.Sprint(id) {
		return nil, &answer{text: fmt.Sprintf("the remote agent %s sent an answer to another request", a.name), isError: true}, nil
	}
	if r.Error != nil {
		return nil, &answer{text: fmt.Sprintf("the remote agent %s answered with an error: %s (JSON-RPC code %d)",
			a.name, capText(oneLine(r.Error.Message), maxErrorText), r.Error.Code), isError: true}, nil
	}
	if len(r.Result) == 0 || string(r.Result) == "null" {
		return nil, &answer{text: fmt.Sprintf("the remote agent %s sent an empty answer", a.name), isError: true}, nil
	}
	return r.Result, nil, nil
}

// decodeSendResult reads a SendMessage result: {"message": …} or
// {"task": …} in A2A 1.0; a message or task told apart by kind in 0.3.
func decodeSendResult(raw json.RawMessage, legacy bool) (*message, *task, error) {
	if legacy {
		var probe struct {
			Kind   string          `json:"kind"`
			Status json.RawMessage `json:"status"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, nil, errors.New("not a JSON object")
		}
		if probe.Kind == "task" || probe.Kind == "" && probe.Status != nil {
			var t task
			if err := json.Unmarshal(raw, &t); err != nil {
				return nil, nil, errors.New("malformed task")
			}
			return nil, &t, nil
		}
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, nil, errors.New("malformed message")
		}
		return &m, nil, nil
	}
	var r struct {
		Message *message `json:"message"`
		Task    *task    `json:"task"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, nil, errors.New("not a SendMessage result")
	}
	switch {
	case r.Message != nil:
		return r.Message, nil, nil
	case r.Task != nil:
		return nil, r.Task, nil
	}
	return nil, nil, errors.New("neither a message nor a task")
}

// taskAnswer returns the answer of a task that has ended or stopped for
// input, and done=false for one still running.
func taskAnswer(t *task) (answer, bool) {
	var said string
	if t.Status.Message != nil {
		said = partsText(t.Status.Message.Parts)
	}
	switch state := normState(t.Status.State); state {
	case "COMPLETED":
		var b []string
		for _, art := range t.Artifacts {
			if s := partsText(art.Parts); s != "" {
				b = append(b, s)
			}
		}
		text := strings.Join(b, "\n")
		if text == "" {
			text = said
		}
		return answer{text: text}, true
	case "FAILED", "REJECTED", "CANCELED", "CANCELLED":
		return answer{text: joinSaid("the remote agent's task was "+strings.ToLower(state), said), isError: true}, true
	case "INPUT_REQUIRED", "AUTH_REQUIRED":
		return answer{text: joinSaid("the remote agent needs more than one message to answer ("+strings.ToLower(state)+")", said), isError: true}, true
	case "SUBMITTED", "WORKING":
		return answer{}, false
	default:
		return answer{text: fmt.Sprintf("the remote agent's task is in an unknown state %q", capText(t.Status.State, 40)), isError: true}, true
	}
}

func joinSaid(what, said string) string {
	if said == "" {
		return what
	}
	return what + ": " + said
}

// normState maps both versions' task states to one form: TASK_STATE_WORKING
// and working are WORKING, input-required is INPUT_REQUIRED.
func normState(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "TASK_STATE_")
	return strings.ReplaceAll(s, "-", "_")
}

// partsText renders parts as text: text as it is, data as JSON, files by
// name.
func partsText(parts []part) string {
	var lines []string
	for _, p := range parts {
		switch {
		case p.Text != nil:
			lines = append(lines, *p.Text)
		case len(p.Data) > 0:
			var buf bytes.Buffer
			if json.Compact(&buf, p.Data) == nil {
				lines = append(lines, buf.String())
			}
		case p.URL != "" || p.Raw != "" || len(p.File) > 0:
			name := p.Filename
			if name == "" {
				name = p.MediaType
			}
			lines = append(lines, fmt.Sprintf("[a file part (%s) is not shown]", name))
		}
	}
	return strings.Join(lines, "\n")
}

// newMessageID returns a random UUID (version 4).
func newMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

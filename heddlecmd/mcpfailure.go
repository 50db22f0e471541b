package heddlecmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// requestLimit bounds a line heddle mcp reads when it cannot open: an
// initialize request is a few hundred bytes.
const requestLimit = 1 << 20

// failureWait is how long heddle mcp that cannot open answers the host's
// requests before it exits; a host that got its answer hangs up sooner.
const failureWait = 5 * time.Second

// jsonrpcInternalError is JSON-RPC's code for an error of the server's own
// (-32603): heddle's code goes in the error's data, never here.
const jsonrpcInternalError = -32603

// answerFailure tells the host of heddle mcp that cannot open why, since
// MCP hosts hide a server's standard error and show only that the
// connection closed. For failureWait, until ctx is done or in ends, it
// reads lines of at most requestLimit bytes from in and answers each
// request among them (one with an id and a method) on out with a JSON-RPC
// error response: its message is err's text led by its code, its data
// {"code": CODE}. Every request is answered, not only the first, because a
// host may probe before it initializes (go-sdk's client sends
// server/discover and, refused, initialize). Notifications and lines that
// are not JSON are not answered; a longer line ends the reading. A
// terminal is not waited on: a person there reads standard error.
//
// The text is err's, which names settings and servers and never a secret
// value (diag.Error's Message); nothing else is added.
func answerFailure(ctx context.Context, in io.Reader, out io.Writer, err error) {
	if f, ok := in.(*os.File); ok {
		if st, serr := f.Stat(); serr == nil && st.Mode()&os.ModeCharDevice != 0 {
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, failureWait)
	defer cancel()
	lines := make(chan []byte)
	// The read is left behind, blocked, when the wait ends first; the
	// command exits.
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, requestLimit)
		for sc.Scan() {
			select {
			case lines <- bytes.Clone(sc.Bytes()):
			case <-ctx.Done():
				return
			}
		}
	}()
	code := diag.CodeOf(err)
	resp := failureResponse{JSONRPC: "2.0"}
	resp.Error.Code = jsonrpcInternalError
	resp.Error.Message = failureText(err, code)
	resp.Error.Data.Code = code
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &req) != nil || req.Method == "" || !validID(req.ID) {
				continue
			}
			resp.ID = req.ID
			if b, merr := json.Marshal(resp); merr == nil {
				_, _ = out.Write(append(b, '\n'))
			}
		case <-ctx.Done():
			return
		}
	}
}

// failureResponse is the JSON-RPC error response of answerFailure.
type failureResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code diag.Code `json:"code,omitempty"`
		} `json:"data"`
	} `json:"error"`
}

// validID reports whether id is a JSON-RPC request id: a string or a
// number (null, or no id, is a notification's).
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

// failureText is err's text on one line, led by code: the failures of a
// start-up (each with its own code) or the diagnostics of a configuration,
// joined with "; ".
func failureText(err error, code diag.Code) string {
	var parts []string
	var se *runtime.StartupError
	if errors.As(err, &se) {
		for _, f := range se.Failures {
			parts = append(parts, f.Err.Error())
		}
	} else {
		parts = strings.Split(err.Error(), "\n")
	}
	text := strings.Join(parts, "; ")
	if code != "" && !strings.HasPrefix(text, string(code)) {
		text = string(code) + ": " + text
	}
	return text
}

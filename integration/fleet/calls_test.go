package fleet_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/serve"
)

// A caller calls the invoke API through the balancer as the proxy in
// front of it would: with its identity in X-Heddle-Subject (serve.auth
// kind trusted_headers, believed from 127.0.0.1).
type caller struct {
	t       *testing.T
	base    string
	subject string
	http    *http.Client
}

// newCaller is subject calling through the balancer at base, over
// connections kept alive; the test's cleanup closes them.
func newCaller(t *testing.T, base, subject string) *caller {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &caller{t: t, base: base, subject: subject, http: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// call calls agent's tool with args in conversation conv ("" for a
// conversation of its own) and returns how it was answered.
func (c *caller) call(agent, tool, conv string, args any) outcome {
	c.t.Helper()
	body, err := json.Marshal(args)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest("POST", c.base+"/v1/agents/"+agent+"/tools/"+tool, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Heddle-Subject", c.subject)
	if conv != "" {
		req.Header.Set(serve.ConversationHeader, conv)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, whose port varies
		}
		return outcome{Err: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return outcome{Status: resp.StatusCode, Err: err.Error()}
	}
	return outcomeOf(resp.StatusCode, b)
}

// echo calls the echo tool of agent in conversation conv.
func (c *caller) echo(agent, conv string) outcome {
	c.t.Helper()
	return c.call(agent, "echo", conv, map[string]any{"text": "hi"})
}

// An outcome is how one call was answered: a result (a 200, with the code
// of its _meta when it is a refusal or an error), an error of the worker
// (a status and its code), one of the balancer's own pages (a status, no
// code), or no answer at all (Err).
type outcome struct {
	Status int
	Code   diag.Code
	Err    string
}

// outcomeOf reads a response of the invoke API, or of the balancer.
func outcomeOf(status int, body []byte) outcome {
	o := outcome{Status: status}
	if status == http.StatusOK {
		var res struct {
			IsError bool `json:"isError"`
			Meta    struct {
				Code diag.Code `json:"code"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			o.Err = "a 200 that is not a result: " + excerpt(body)
			return o
		}
		o.Code = res.Meta.Code
		if res.IsError && o.Code == "" {
			o.Code = "TOOL_ERROR"
		}
		return o
	}
	var e struct {
		Error struct {
			Code diag.Code `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		o.Code = e.Error.Code
	}
	return o
}

// ok reports whether the call ran and its tool answered without error.
func (o outcome) ok() bool { return o.Status == http.StatusOK && o.Code == "" && o.Err == "" }

// limiter reports whether the call was decided by the rate limit: admitted
// or refused TOOL_RATE_LIMITED.
func (o outcome) limiter() bool {
	return o.ok() || o.Status == http.StatusOK && o.Code == diag.ToolRateLimited
}

// String is the outcome as the figures report it: ok, a code, HTTP 503
// STATE_UNAVAILABLE, HTTP 502 (the balancer's own page), no answer.
func (o outcome) String() string {
	switch {
	case o.Err != "":
		return "no answer (" + o.Err + ")"
	case o.ok():
		return "ok"
	case o.Status == http.StatusOK:
		return string(o.Code)
	case o.Code != "":
		return fmt.Sprintf("HTTP %d %s", o.Status, o.Code)
	default:
		return fmt.Sprintf("HTTP %d (haproxy)", o.Status)
	}
}

func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// A tally counts outcomes by their String.
type tally map[string]int

func (t tally) add(o fmt.Stringer) { t[o.String()]++ }

// failed is how many outcomes were not ok.
func (t tally) failed() int {
	n := 0
	for k, v := range t {
		if k != "ok" {
			n += v
		}
	}
	return n
}

// String lists the counts, ok first: "ok 10, TOOL_RATE_LIMITED 20".
func (t tally) String() string {
	keys := slices.Sorted(maps.Keys(t))
	slices.SortStableFunc(keys, func(a, b string) int {
		switch {
		case a == "ok" && b != "ok":
			return -1
		case b == "ok" && a != "ok":
			return 1
		}
		return 0
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, t[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// admitsAtMost is how many calls a token bucket of calls per per admits,
// starting full, over elapsed: the burst, and what it refills meanwhile.
func admitsAtMost(calls int, per, elapsed time.Duration) int {
	return calls + int(int64(elapsed)*int64(calls)/int64(per))
}

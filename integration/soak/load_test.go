//go:build soak

package soak

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Outcomes of a call through the invoke API.
const (
	outcomeOK      = "ok"      // 200, a result
	outcomeRefusal = "refusal" // 200, isError: a refusal the model reads (or the tool's own error)
	outcomeError   = "error"   // any other status, or no answer at all
)

// Codes the soak gives answers that carry none of heddle's.
const (
	codeNone      = "-"           // a successful call
	codeToolError = "tool_error"  // a tool's own error, which has no code: the fail tool's
	codeNoAnswer  = "NO_ANSWER"   // no HTTP answer (the connection failed, or the client gave up)
	codeUncoded   = "UNCODED"     // a failure that carries no code
	codeGarbled   = "UNDECODABLE" // an answer 200 that is not JSON
)

// request is one call (or listing) a caller makes.
type request struct {
	kind   string // what the mix calls it: echo, sleep, listing, …
	method string
	path   string
	body   string
	ownErr bool // the tool answers its own error (no code expected)
}

// mcpAgents are the agents of the MCP servers, one per server.
var mcpAgents = []string{"s1", "s2", "h1", "h2", "e1", "e2"}

// mix draws the next request: mostly quick calls to every server and the
// SQL source, some slow enough to pass the server's timeout_ms, some that
// heddle refuses before calling anything, and listings.
func mix(rng *rand.Rand, n int) request {
	agent := mcpAgents[rng.IntN(len(mcpAgents))]
	post := func(kind, agent, tool, body string) request {
		return request{kind: kind, method: http.MethodPost, path: "/v1/agents/" + agent + "/tools/" + tool, body: body}
	}
	switch p := rng.IntN(100); {
	case p < 30:
		return post("echo", agent, "echo", `{"text": "soak `+strconv.Itoa(n)+`"}`)
	case p < 45:
		return post("add", agent, "add", `{"a": `+strconv.Itoa(n)+`, "b": 2}`)
	case p < 65:
		return post("sleep", agent, "sleep", `{"ms": `+strconv.Itoa(rng.IntN(50))+`}`)
	case p < 66:
		// Past the server's timeout_ms: a TRANSPORT_TIMEOUT refusal.
		return post("slow", agent, "sleep", `{"ms": 2500}`)
	case p < 69:
		r := post("fail", agent, "fail", `{"message": "soak"}`)
		r.ownErr = true
		return r
	case p < 71:
		return post("unknown_tool", agent, "no_such_tool", `{}`)
	case p < 73:
		return post("bad_args", agent, "echo", `{"text": 5}`)
	case p < 74:
		return post("unknown_agent", "no_such_agent", "echo", `{"text": "x"}`)
	case p < 82:
		return request{kind: "listing", method: http.MethodGet, path: "/v1/agents/" + agent + "/tools"}
	default:
		return post("sql", "q", "open_incidents", `{"min_severity": `+strconv.Itoa(1+rng.IntN(5))+`}`)
	}
}

// answer is how one request ended.
type answer struct {
	outcome, code string
	took          time.Duration
}

// do sends r and classifies its answer by outcome and code.
func do(c *http.Client, base string, r request) answer {
	start := time.Now()
	req, err := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		panic(err)
	}
	if r.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.Do(req)
	if err != nil {
		return answer{outcomeError, codeNoAnswer, time.Since(start)}
	}
	defer res.Body.Close()
	var v struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
		IsError bool `json:"isError"`
		Meta    struct {
			Code string `json:"code"`
		} `json:"_meta"`
	}
	var raw json.RawMessage
	derr := json.NewDecoder(res.Body).Decode(&raw)
	took := time.Since(start)
	if derr == nil && res.StatusCode == http.StatusOK && r.method == http.MethodGet {
		return answer{outcomeOK, codeNone, took} // a listing: an array of tools
	}
	if derr == nil {
		derr = json.Unmarshal(raw, &v)
	}
	switch {
	case derr != nil && res.StatusCode != http.StatusOK:
		return answer{outcomeError, codeUncoded, took}
	case derr != nil:
		return answer{outcomeError, codeGarbled, took}
	case res.StatusCode != http.StatusOK:
		return answer{outcomeError, orUncoded(v.Error.Code), took}
	case v.IsError && v.Meta.Code != "":
		return answer{outcomeRefusal, v.Meta.Code, took}
	case v.IsError && r.ownErr:
		return answer{outcomeRefusal, codeToolError, took}
	case v.IsError:
		return answer{outcomeRefusal, codeUncoded, took}
	}
	return answer{outcomeOK, codeNone, took}
}

func orUncoded(code string) string {
	if code == "" {
		return codeUncoded
	}
	return code
}

// slowCall is a call that took longer than its deadline and margin, or
// failed without a code: the details the report lists.
type slowCall struct {
	At      time.Duration `json:"at_ns"` // when it began, since the soak began
	Kind    string        `json:"kind"`
	Path    string        `json:"path"`
	Outcome string        `json:"outcome"`
	Code    string        `json:"code"`
	Took    time.Duration `json:"took_ns"`
	// Starved is how much longer than usual serve or the soak waited
	// for a CPU while a late call ran (see starvation).
	Starved time.Duration `json:"starved_ns,omitempty"`
}

// tally is what a load phase came to.
type tally struct {
	mu        sync.Mutex
	calls     int
	byOutcome map[string]map[string]int // outcome → code → calls
	byKind    map[string]map[string]int // request kind → outcome → calls
	byAgent   map[string]map[string]int // agent → outcome → calls
	took      []time.Duration
	late      []slowCall // past the deadline and margin
	uncoded   []slowCall
	lateN     int
	uncodedN  int
}

func newTally() *tally {
	return &tally{byOutcome: map[string]map[string]int{}, byKind: map[string]map[string]int{}, byAgent: map[string]map[string]int{}}
}

// keep bounds the examples of uncoded calls and log lines the report
// lists; maxLate the late calls kept to be weighed against the machine's
// load.
const (
	keep    = 20
	maxLate = 1000
)

// add records one request's answer.
func (t *tally) add(begin time.Time, r request, a answer, start time.Time, limit time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	bump(t.byOutcome, a.outcome, a.code)
	bump(t.byKind, r.kind, a.outcome)
	bump(t.byAgent, agentOf(r.path), a.outcome)
	t.took = append(t.took, a.took)
	sc := slowCall{At: start.Sub(begin), Kind: r.kind, Path: r.method + " " + r.path, Outcome: a.outcome, Code: a.code, Took: a.took}
	if a.took > limit {
		t.lateN++
		if len(t.late) < maxLate {
			t.late = append(t.late, sc)
		}
	}
	if a.code == codeUncoded || a.code == codeNoAnswer || a.code == codeGarbled {
		t.uncodedN++
		if len(t.uncoded) < keep {
			t.uncoded = append(t.uncoded, sc)
		}
	}
}

func bump(m map[string]map[string]int, k1, k2 string) {
	if m[k1] == nil {
		m[k1] = map[string]int{}
	}
	m[k1][k2]++
}

// agentOf is the agent a request's path names.
func agentOf(path string) string {
	rest, _ := strings.CutPrefix(path, "/v1/agents/")
	agent, _, _ := strings.Cut(rest, "/")
	return agent
}

// percentile is the p-th percentile of the calls' durations.
func (t *tally) percentile(p float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.took) == 0 {
		return 0
	}
	slices.Sort(t.took)
	return t.took[min(len(t.took)-1, int(float64(len(t.took))*p/100))]
}

// load runs callers that each make requests one after another, a short
// pause between two, until end or maxPerCaller requests, whichever comes
// first; it returns when every caller has stopped.
func load(c *http.Client, base string, callers int, begin, end time.Time, limit time.Duration, t *tally, seed uint64) {
	maxPerCaller := int(time.Until(end)/time.Millisecond) + 1 // at most one a millisecond
	var wg sync.WaitGroup
	for n := range callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(n)))
			for i := 0; i < maxPerCaller && time.Now().Before(end); i++ {
				r := mix(rng, i)
				start := time.Now()
				t.add(begin, r, do(c, base, r), start, limit)
				// A pause of 5 to 25 ms: callers like clients, not a
				// benchmark's, on a machine that the servers and the
				// soak share with serve.
				time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// String shows an answer, for messages.
func (a answer) String() string { return fmt.Sprintf("%s %s in %v", a.outcome, a.code, a.took) }

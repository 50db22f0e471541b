package serve_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	_ "github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
	"github.com/heddlehq/heddle/usecase"
)

func TestMain(m *testing.M) {
	if os.Getenv(loadClientEnv) != "" {
		os.Exit(runLoadClient())
	}
	goleak.VerifyTestMain(m)
}

// The use cases the tests grant: serve.echo answers its text at once;
// serve.hold tells hold it has started, then waits until hold releases it
// or its context ends.
type (
	echoIn struct {
		Text string `json:"text"`
	}
	echoOut struct {
		Text string `json:"text"`
	}
)

func init() {
	usecase.Register("serve.echo", func(_ context.Context, in echoIn) (echoOut, error) { return echoOut(in), nil }, usecase.ReadOnly())
	usecase.Register("serve.hold", func(ctx context.Context, _ struct{}) (struct{}, error) {
		gate := holdGate()
		holdStarted <- struct{}{}
		select {
		case <-gate:
			return struct{}{}, nil
		case <-ctx.Done():
			return struct{}{}, ctx.Err()
		}
	}, usecase.ReadOnly())
}

// What serve.hold waits on. Tests that call it do not run in parallel.
var (
	holdStarted = make(chan struct{}, 1024) // one value per call started
	holdMu      sync.Mutex
	holdGatec   = make(chan struct{}) // closed by releaseHeld
)

func holdGate() chan struct{} {
	holdMu.Lock()
	defer holdMu.Unlock()
	return holdGatec
}

// releaseHeld lets every serve.hold call return, and makes later ones wait
// again.
func releaseHeld() {
	holdMu.Lock()
	defer holdMu.Unlock()
	close(holdGatec)
	holdGatec = make(chan struct{})
}

// usecases are the keys the tests' plans may grant.
var usecases = []string{"serve.echo", "serve.hold", "serve.sleep"}

// trustLoopback is a serve: section that believes the X-Heddle-* headers
// of requests from this machine, as the tests send them.
const trustLoopback = "serve:\n  auth: {kind: trusted_headers, proxies: [127.0.0.1, \"::1\"]}\n"

// inMemoryServer is an ai: section with one MCP server, srv, reached over
// an in-memory transport (see testmcp.DialInMemory).
const inMemoryServer = "ai:\n  mcp_servers:\n    srv: {url: http://127.0.0.1:1/mcp}\n"

// mcpAgent grants srv with a rule that denies add to callers without the
// sre role (so it is not listed to them), one that denies echo of the text
// "forbidden", and denies big outright.
const mcpAgent = "description: Tools of the test server.\ncapabilities: [{kind: mcp, server: srv}]\n" +
	"policies:\n  denied_tools: [big]\n  rules:\n    - {when: 'tool.original_name == \"add\" && !(\"sre\" in caller.roles)', effect: deny}\n" +
	"    - {when: 'tool.original_name == \"echo\" && args.text == \"forbidden\"', effect: deny}\n"

// front is a Server of a runtime on a real listener on 127.0.0.1.
type front struct {
	t      testing.TB
	url    string
	addr   string
	rt     *runtime.Runtime
	s      *serve.Server
	client *http.Client
}

// startFront opens a runtime of api (an api.yaml, with its serve: section)
// and agents, whose MCP servers are in-memory test servers, and serves it
// on 127.0.0.1. Everything is closed when the test ends.
func startFront(t testing.TB, api string, agents map[string]string) *front {
	t.Helper()
	return startFrontWith(t, api, agents, serve.Options{})
}

// startFrontWith is startFront with opts for the server (its Addr and
// Metrics are the listener's and the runtime's). With opts.Generations it
// serves those runtimes, and reads neither api nor agents.
func startFrontWith(t testing.TB, api string, agents map[string]string, opts serve.Options) *front {
	t.Helper()
	m := metrics.New()
	var rt *runtime.Runtime
	if opts.Generations != nil { // the caller's runtimes, closed by the caller
		rt = opts.Generations.Current()
	} else {
		rt = openTestRuntime(t, api, agents, m)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Addr, opts.Metrics = ln.Addr(), m
	s, err := serve.New(context.Background(), rt, &opts)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	// The server's goroutines carry the label door=heddle in CPU profiles
	// (go tool pprof -tagfocus door=heddle), beside the benchmarks'
	// minimal door's door=minimal.
	pprof.Do(context.Background(), pprof.Labels("door", "heddle"), func(context.Context) {
		go func() { done <- s.Serve(ln) }()
	})
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	f := &front{t: t, url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), rt: rt, s: s, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return f
}

// openTestRuntime opens a runtime of api and agents, the in-memory test
// server for every MCP server, its calls observed by m; it is closed when
// the test ends.
func openTestRuntime(t testing.TB, api string, agents map[string]string, m *metrics.Metrics) *runtime.Runtime {
	t.Helper()
	p := plantest.Must(t, api, agents, usecases...)
	rt, err := runtime.Open(context.Background(), p, runtime.Options{OnCall: m.Observe, Kinds: testkinds.InMemory(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// request is a request to f; a POST says its body is JSON.
func (f *front) request(method, path, body string) *http.Request {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// response is an answer of f, its body read whole.
type response struct {
	req    *http.Request
	status int
	header http.Header
	body   []byte
}

func (f *front) send(req *http.Request) *response {
	f.t.Helper()
	res, err := f.client.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return &response{req: req, status: res.StatusCode, header: res.Header, body: b}
}

func (f *front) get(path string) *response { return f.send(f.request("GET", path, "")) }

func (f *front) post(path, body string) *response { return f.send(f.request("POST", path, body)) }

// contains reports whether the body holds s.
func (r *response) contains(s string) bool { return bytes.Contains(r.body, []byte(s)) }

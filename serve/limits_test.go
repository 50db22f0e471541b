package serve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/memnet"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
)

// holdAgent grants the use cases with a tool_timeout_ms long enough that a
// held call ends only when the test releases it.
const holdAgent = "capabilities: [{kind: usecase, keys: [serve.echo, serve.hold]}]\npolicies: {tool_timeout_ms: 60000}\n"

// TestTooBusy: with max_in_flight calls under way, one more call, or a
// listing of tools or agents, is answered 503 TOO_BUSY with Retry-After at
// once, and nothing is called; the probes, the metrics and the API
// document still answer, and once a call ends the next one is served.
func TestTooBusy(t *testing.T) {
	const maxInFlight = 3
	f := startFront(t, trustLoopback+fmt.Sprintf("  limits: {max_in_flight: %d}\n", maxInFlight)+inMemoryServer,
		map[string]string{"h": holdAgent, "a": mcpAgent})
	var wg sync.WaitGroup
	held := make(chan *response, maxInFlight)
	for range maxInFlight {
		wg.Go(func() { held <- f.post("/v1/agents/h/tools/serve_hold", `{}`) })
	}
	for range maxInFlight {
		<-holdStarted
	}
	for _, r := range []*response{
		f.post("/v1/agents/h/tools/serve_echo", `{"text":"x"}`),
		f.post("/v1/agents/a/tools/echo", `{"text":"x"}`),
		f.get("/v1/agents/a/tools"),
		f.get("/v1/agents"),
	} {
		if got := codes(t, r); r.status != 503 || !slices.Equal(got, []diag.Code{diag.TooBusy}) || r.header.Get("Retry-After") != "1" {
			t.Errorf("%s at max_in_flight: %d %v Retry-After %q", r.req.URL.Path, r.status, got, r.header.Get("Retry-After"))
		}
	}
	for _, path := range []string{"/livez", "/readyz", "/metrics", "/v1/openapi.json"} {
		if r := f.get(path); r.status != 200 {
			t.Errorf("%s at max_in_flight: %d %s", path, r.status, r.body)
		}
	}
	if len(holdStarted) != 0 {
		t.Error("a call refused TOO_BUSY ran")
	}
	releaseHeld()
	wg.Wait()
	close(held)
	for r := range held {
		if r.status != 200 {
			t.Errorf("a held call: %d %s", r.status, r.body)
		}
	}
	if r := f.post("/v1/agents/h/tools/serve_echo", `{"text":"x"}`); r.status != 200 {
		t.Errorf("after the held calls: %d %s", r.status, r.body)
	}
}

// TestSlowClientsDoNotStopTheProbes: with hundreds of connections open
// that sent a call's header and stall its body, hundreds that stall in the
// middle of a header, and a hundred idle keep-alive connections, /livez
// keeps answering on new connections; then serve.limits' timeouts close
// every one of them, a stalled body answered 400 REQUEST_INVALID first.
func TestSlowClientsDoNotStopTheProbes(t *testing.T) {
	const (
		stalledBodies  = 300
		stalledHeaders = 200
		idle           = 100
		headerTimeout  = 2 * time.Second
		readTimeout    = 3 * time.Second
		idleTimeout    = 3 * time.Second
	)
	f := startFront(t, trustLoopback+fmt.Sprintf("  limits: {read_header_timeout_ms: %d, read_timeout_ms: %d, idle_timeout_ms: %d}\n",
		headerTimeout.Milliseconds(), readTimeout.Milliseconds(), idleTimeout.Milliseconds())+inMemoryServer, testAgents)
	start := time.Now()
	var conns []*slowConn
	for i := range stalledBodies + stalledHeaders + idle {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		sc := &slowConn{Conn: c, r: bufio.NewReader(c)}
		switch {
		case i < stalledBodies:
			sc.kind = "stalled body"
			_, err = fmt.Fprintf(c, "POST /v1/agents/u/tools/serve_echo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"text\": \"", f.addr)
		case i < stalledBodies+stalledHeaders:
			sc.kind = "stalled header"
			_, err = fmt.Fprintf(c, "GET /livez HTTP/1.1\r\nHost: %s\r\nX-Slow: ", f.addr)
		default:
			sc.kind = "idle"
			if _, err = fmt.Fprintf(c, "GET /livez HTTP/1.1\r\nHost: %s\r\n\r\n", f.addr); err == nil {
				var res *http.Response
				if res, err = http.ReadResponse(sc.r, nil); err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		}
		if err != nil {
			t.Fatalf("%s connection: %v", sc.kind, err)
		}
		conns = append(conns, sc)
	}
	for i := range 50 {
		t0 := time.Now()
		r := f.get("/livez")
		if r.status != 200 {
			t.Fatalf("livez %d: %d", i, r.status)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("livez %d took %v", i, d)
		}
		f.client.Transport.(*http.Transport).CloseIdleConnections() // a new connection each time
	}
	if d := time.Since(start); d >= headerTimeout {
		t.Fatalf("the probes took %v, past the header timeout: the slow connections may have been closed before they were measured", d)
	}
	// Every slow connection is closed by the server, within its timeout
	// and a margin.
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.waitClosed(readTimeout + 5*time.Second) })
	}
	wg.Wait()
	for _, c := range conns {
		switch {
		case c.err != nil:
			t.Errorf("%s connection: %v", c.kind, c.err)
		case c.kind == "stalled body" && (c.status != 400 || !strings.Contains(c.body, string(diag.RequestInvalid))):
			t.Errorf("stalled body answered %d %s", c.status, c.body)
		}
	}
}

// slowConn is one client connection that sends part of a request, or a
// request and then nothing.
type slowConn struct {
	net.Conn
	r    *bufio.Reader
	kind string
	// what waitClosed found
	status int
	body   string
	err    error
}

// waitClosed reads what the server sends until it closes the connection,
// and fails when it does not within d.
func (c *slowConn) waitClosed(d time.Duration) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	if c.kind == "stalled body" {
		res, err := http.ReadResponse(c.r, nil)
		if err != nil {
			c.err = fmt.Errorf("no answer: %w", err)
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		c.status, c.body = res.StatusCode, string(b)
	}
	_, err := io.Copy(io.Discard, c.r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.err = fmt.Errorf("still open after %v", d)
	}
}

// timeoutsAPI is a front door with short timeouts, at most four
// connections, and the use cases only.
const timeoutsAPI = trustLoopback + "  limits: {read_header_timeout_ms: 1000, read_timeout_ms: 2000, idle_timeout_ms: 3000, max_connections: 4}\nai: {}\n"

// bubbleAgent grants the use cases that answer at once and after a while.
const bubbleAgent = "capabilities: [{kind: usecase, keys: [serve.echo, serve.sleep]}]\npolicies: {tool_timeout_ms: 60000}\n"

// bubbleFront serves timeoutsAPI on a memnet listener, in the calling
// synctest bubble; it returns a dialer and a function that stops it all.
func bubbleFront(t *testing.T) (dial func() *slowConn, stop func()) {
	n := memnet.New()
	ln, err := n.Listen("127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	p := plantest.Must(t, timeoutsAPI, map[string]string{"u": bubbleAgent}, usecases...)
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(context.Background(), rt, &serve.Options{Addr: ln.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	var conns []net.Conn
	dial = func() *slowConn {
		c, err := n.DialContext(context.Background(), "tcp", "127.0.0.1:8080")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		return &slowConn{Conn: c, r: bufio.NewReader(c)}
	}
	stop = func() {
		for _, c := range conns {
			c.Close()
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		<-done
		_ = rt.Close()
	}
	return dial, stop
}

// closedAfter reads c until the server closes it, and sends how long that
// took from start.
func closedAfter(c *slowConn, start time.Time) <-chan time.Duration {
	ch := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, c.r)
		ch <- time.Since(start)
	}()
	return ch
}

// livez sends GET /livez on c and reads the answer, keeping c open.
func (c *slowConn) livez() error {
	if _, err := io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"); err != nil {
		return err
	}
	res, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("livez %d", res.StatusCode)
	}
	return nil
}

// TestTimeoutsCloseConnections, on a fake clock: a connection that stalls
// in its header is closed at read_header_timeout_ms, one that stalls its
// body at read_timeout_ms (after a 400 REQUEST_INVALID), and an idle
// keep-alive connection at idle_timeout_ms — each at that moment, not
// before.
func TestTimeoutsCloseConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dial, stop := bubbleFront(t)
		defer stop()
		start := time.Now()
		header, body, idle := dial(), dial(), dial()
		_, _ = io.WriteString(header, "GET /livez HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Slow: ")
		_, _ = io.WriteString(body, "POST /v1/agents/u/tools/serve_echo HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		if err := idle.livez(); err != nil {
			t.Fatal(err)
		}
		headerClosed := closedAfter(header, start)
		idleClosed := closedAfter(idle, start)
		res, err := http.ReadResponse(body.r, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if d := time.Since(start); res.StatusCode != 400 || !strings.Contains(string(b), string(diag.RequestInvalid)) || d != 2*time.Second {
			t.Errorf("stalled body: %d %s after %v, want 400 REQUEST_INVALID after 2s", res.StatusCode, b, d)
		}
		bodyClosed := closedAfter(body, start)
		for _, tc := range []struct {
			name string
			ch   <-chan time.Duration
			want time.Duration
		}{{"stalled header", headerClosed, time.Second}, {"stalled body", bodyClosed, 2 * time.Second}, {"idle", idleClosed, 3 * time.Second}} {
			if got := <-tc.ch; got != tc.want {
				t.Errorf("%s connection closed after %v, want %v", tc.name, got, tc.want)
			}
		}
	})
}

// TestConnectionLimit, on a fake clock: at max_connections, a new
// connection is served after closing the connection idle longest; when
// every connection stalls its body, the new one waits until the one
// stalled longest has for serve.StallAge, and is served in its place.
func TestConnectionLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dial, stop := bubbleFront(t)
		defer stop()
		var open []*slowConn
		for range 4 {
			c := dial()
			if err := c.livez(); err != nil {
				t.Fatal(err)
			}
			open = append(open, c)
			time.Sleep(time.Millisecond) // each idle since a moment of its own
		}
		start := time.Now()
		oldest := closedAfter(open[0], start)
		fifth := dial()
		if err := fifth.livez(); err != nil {
			t.Fatal(err)
		}
		if d := <-oldest; d != 0 {
			t.Errorf("the idlest connection closed after %v, want at once", d)
		}
		// Four busy connections: each stalls a body, a moment after the
		// one before.
		busy := append(open[1:], fifth)
		start = time.Now()
		var closed []<-chan time.Duration
		for _, c := range busy {
			_, _ = io.WriteString(c, "POST /v1/agents/u/tools/serve_echo HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
			// closedAfter reads the 400, if any, then the close.
			closed = append(closed, closedAfter(c, start))
			synctest.Wait() // the server has read the header, and waits for the body
			time.Sleep(time.Millisecond)
		}
		next := dial()
		served := make(chan time.Duration, 1)
		go func() {
			if err := next.livez(); err != nil { // waits for the stalled body's slot
				t.Error(err)
			}
			served <- time.Since(start)
		}()
		time.Sleep(time.Until(start.Add(serve.StallAge - time.Millisecond)))
		synctest.Wait()
		select {
		case d := <-served:
			t.Fatalf("a connection past max_connections was served after %v, before a body had stalled for serve.StallAge", d)
		default:
		}
		if d := <-served; d != serve.StallAge {
			t.Errorf("served after %v, want %v: when the body stalled longest had for serve.StallAge", d, serve.StallAge)
		}
		if d := <-closed[0]; d != serve.StallAge {
			t.Errorf("the body stalled longest: its connection closed after %v, want %v", d, serve.StallAge)
		}
		for i, ch := range closed[1:] {
			if d, want := <-ch, 2*time.Second+time.Duration(i+1)*time.Millisecond; d != want {
				t.Errorf("stalled body %d: its connection closed after %v, want %v (read_timeout_ms)", i+1, d, want)
			}
		}
	})
}

// TestConnectionLimitSparesCalls, on a fake clock: at max_connections with
// every connection running a call, a new connection closes none of them: it
// waits until a call is answered and its connection turns idle.
func TestConnectionLimitSparesCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dial, stop := bubbleFront(t)
		defer stop()
		start := time.Now()
		const body = `{"ms": 3000}`
		var calls []*slowConn
		for range 4 {
			c := dial()
			_, _ = fmt.Fprintf(c, "POST /v1/agents/u/tools/serve_sleep HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			calls = append(calls, c)
		}
		synctest.Wait() // every call sleeps
		next := dial()
		served := make(chan time.Duration, 1)
		go func() {
			if err := next.livez(); err != nil {
				t.Error(err)
			}
			served <- time.Since(start)
		}()
		for _, c := range calls {
			res, err := http.ReadResponse(c.r, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if d := time.Since(start); res.StatusCode != 200 || d != 3*time.Second {
				t.Errorf("a call at max_connections: %d after %v, want 200 after 3s", res.StatusCode, d)
			}
		}
		if d := <-served; d != 3*time.Second {
			t.Errorf("served after %v, want 3s: when a call's connection turned idle", d)
		}
	})
}

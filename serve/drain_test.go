package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/memnet"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
	"github.com/heddlehq/heddle/usecase"
)

// serve.sleep sleeps for its ms, or until its context ends: in a synctest
// bubble, unlike serve.hold, it blocks durably.
type sleepIn struct {
	MS int `json:"ms"`
}

// sleepsStarted counts the serve.sleep calls that have begun.
var sleepsStarted atomic.Int64

func init() {
	usecase.Register("serve.sleep", func(ctx context.Context, in sleepIn) (struct{}, error) {
		sleepsStarted.Add(1)
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return struct{}{}, nil
		case <-ctx.Done():
			return struct{}{}, ctx.Err()
		}
	}, usecase.ReadOnly())
}

// sleepAgent grants serve.sleep with a tool_timeout_ms longer than any
// sleep of the tests.
const sleepAgent = "capabilities: [{kind: usecase, keys: [serve.sleep]}]\npolicies: {tool_timeout_ms: 600000}\n"

// drainFront serves sleepAgent on a memnet listener in the calling synctest
// bubble, and returns the server, a client of it, and a function that waits
// for Serve to return and closes the runtime.
func drainFront(t *testing.T) (*serve.Server, *http.Client, func()) {
	n := memnet.New()
	ln, err := n.Listen("127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	p := plantest.Must(t, trustLoopback+"ai: {}\n", map[string]string{"u": sleepAgent}, "serve.sleep")
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
	client := &http.Client{Transport: n.Transport()}
	return s, client, func() {
		client.CloseIdleConnections()
		<-done
		_ = rt.Close()
	}
}

// sleepCall posts a serve.sleep call of d and sends its answer once it has
// one; it returns when the call has started: when the use case runs, not
// only when the bubble's goroutines are blocked (a goroutine waiting for a
// mutex is not durably blocked, and the server may not have read the
// request yet).
func sleepCall(t *testing.T, client *http.Client, d time.Duration) <-chan *response {
	started := sleepsStarted.Load()
	ch := make(chan *response, 1)
	go func() {
		body := fmt.Sprintf(`{"ms": %d}`, d.Milliseconds())
		req, _ := http.NewRequest("POST", "http://127.0.0.1:8080/v1/agents/u/tools/serve_sleep", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Errorf("a held call got no answer: %v", err)
			ch <- &response{req: req}
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		ch <- &response{req: req, status: res.StatusCode, header: res.Header, body: b}
	}()
	for synctest.Wait(); sleepsStarted.Load() == started && len(ch) == 0; synctest.Wait() {
		yieldProcessor()
	}
	return ch
}

// readyz is what s answers /readyz now.
func readyz(s *serve.Server) *response {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/readyz", nil)
	s.ServeHTTP(rec, req)
	return &response{req: req, status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// TestDrainFinishesCalls: a call in flight when the drain begins is
// answered as usual when it ends within the grace period, and Shutdown
// returns nil; from the drain's start /readyz answers 503 SHUTTING_DOWN.
func TestDrainFinishesCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, client, stop := drainFront(t)
		defer stop()
		if r := readyz(s); r.status != 200 {
			t.Fatalf("/readyz before the drain: %d %s", r.status, r.body)
		}
		answer := sleepCall(t, client, 20*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shut := make(chan error, 1)
		go func() { shut <- s.Shutdown(ctx) }()
		synctest.Wait()
		if r := readyz(s); r.status != 503 || !slices.Equal(codes(t, r), []diag.Code{diag.ShuttingDown}) {
			t.Errorf("/readyz during the drain: %d %s", r.status, r.body)
		}
		if r := <-answer; r.status != 200 {
			t.Errorf("a call that ended within the grace period: %d %s", r.status, r.body)
		}
		if err := <-shut; err != nil {
			t.Errorf("Shutdown after every call ended: %v", err)
		}
	})
}

// TestDrainCutsCalls: a call still running when the drain's context ends
// is cancelled and answered 503 SHUTTING_DOWN, not left without an answer,
// and Shutdown says the drain was cut.
func TestDrainCutsCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, client, stop := drainFront(t)
		defer stop()
		answer := sleepCall(t, client, time.Hour)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := s.Shutdown(ctx)
		if !diag.Has(err, diag.ShuttingDown) {
			t.Errorf("Shutdown of a drain cut at its deadline: %v, want SHUTTING_DOWN", err)
		}
		r := <-answer
		if r.status != 503 || !slices.Equal(codes(t, r), []diag.Code{diag.ShuttingDown}) {
			t.Errorf("a call running at the deadline: %d %s", r.status, r.body)
		}
		if d := time.Since(start); d < 30*time.Second || d > 31*time.Second {
			t.Errorf("the call was cut after %v, want 30s (and Shutdown's poll)", d)
		}
	})
}

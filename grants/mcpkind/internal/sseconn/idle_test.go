package sseconn

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heddlehq/heddle/internal/memnet"
)

// TestIdleBound: an event stream that keeps sending lives on past the
// bound; one that falls silent is cut at it with ErrIdle; a response that
// is no event stream is left alone. The server and its client are on an
// in-memory network in a synctest bubble, so the cut comes exactly one
// bound after the last event.
func TestIdleBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = 150 * time.Millisecond
		n := memnet.New()
		srv := n.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/plain" {
				w.Header().Set("Content-Type", "application/json")
				w.(http.Flusher).Flush()
				time.Sleep(2 * bound)
				fmt.Fprint(w, "{}\n")
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			// Four events half a bound apart, then silence.
			for i := range 4 {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
				time.Sleep(bound / 2)
			}
			<-r.Context().Done()
		}))
		defer srv.Close()
		tr := n.Transport()
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: IdleBound(tr, bound)}

		start := time.Now()
		res, err := c.Get(srv.URL + "/events")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(res.Body)
		events := 0
		for sc.Scan() {
			if sc.Text() != "" {
				events++
			}
		}
		took := time.Since(start)
		_ = res.Body.Close()
		if events != 4 {
			t.Errorf("read %d events, want the 4 sent", events)
		}
		if !errors.Is(sc.Err(), ErrIdle) {
			t.Errorf("stream ended with %v, want ErrIdle", sc.Err())
		}
		// The last event came at 1.5 bounds, 3 × bound/2; the cut one bound
		// later. The stream lived past the bound because events kept coming.
		if want := 3*bound/2 + bound; took != want {
			t.Errorf("stream cut after %v, want %v", took, want)
		}

		res, err = c.Get(srv.URL + "/plain")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
			t.Errorf("a plain response slower than the bound: %v", err)
		}
	})
}

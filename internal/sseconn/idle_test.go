package sseconn

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestIdleBound: an event stream that keeps sending lives on past the
// bound; one that falls silent is cut at it with ErrIdle; a response that
// is no event stream is left alone.
func TestIdleBound(t *testing.T) {
	const bound = 150 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush()
			time.Sleep(2 * bound)
			fmt.Fprint(w, "{}\n")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// Four events a bound apart at less than it, then silence.
		for i := range 4 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(bound / 2)
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := &http.Client{Transport: IdleBound(http.DefaultTransport, bound)}

	res, err := c.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
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
	// The silence began at about 2×bound; the cut comes one bound later.
	if want := 2*bound + bound; took < want-bound/2 || took > want+time.Second {
		t.Errorf("stream cut after %v, want about %v", took, want)
	}

	res, err = c.Get(srv.URL + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
		t.Errorf("a plain response slower than the bound: %v", err)
	}
}

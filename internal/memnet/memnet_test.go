package memnet_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/heddlehq/heddle/internal/memnet"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTimeMovesOn: a client waiting an hour for a server's answer is
// durably blocked, so the bubble's clock jumps the hour at once.
func TestTimeMovesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		srv := n.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Hour)
			_, _ = io.WriteString(w, "later")
		}))
		defer srv.Close()
		tr := n.Transport()
		defer tr.CloseIdleConnections()
		start := time.Now()
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "later" {
			t.Fatalf("body = %q, %v", b, err)
		}
		if d := time.Since(start); d != time.Hour {
			t.Errorf("answered after %v of bubble time, want 1h", d)
		}
		if got := resp.Request.Host; got != srv.Listener.Addr().String() {
			t.Errorf("host %q, want the listener's address %s", got, srv.Listener.Addr())
		}
	})
}

// TestAddresses: a dial with no listener is refused; a closed listener's
// address can be listened on again; an open one's cannot.
func TestAddresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		l, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		if _, err := n.Listen(addr); !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("Listen(%s) while open: %v, want EADDRINUSE", addr, err)
		}
		l.Close()
		if _, err := l.Accept(); err == nil {
			t.Error("Accept on a closed listener succeeded")
		}
		if _, err := n.DialContext(context.Background(), "tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial to a closed listener: %v, want ECONNREFUSED", err)
		}
		again, err := n.Listen(addr)
		if err != nil {
			t.Fatalf("Listen(%s) after close: %v", addr, err)
		}
		defer again.Close()
		accepted := make(chan error, 1)
		go func() {
			c, err := again.Accept()
			if err == nil {
				if c.LocalAddr().String() != addr {
					err = errors.New("the accepted end has local address " + c.LocalAddr().String())
				}
				c.Close()
			}
			accepted <- err
		}()
		c, err := n.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if c.RemoteAddr().String() != addr {
			t.Errorf("the dialled end has remote address %s, want %s", c.RemoteAddr(), addr)
		}
		c.Close()
		if err := <-accepted; err != nil {
			t.Error(err)
		}
		other, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if other.Addr().String() == addr {
			t.Errorf("a new listener got the reused address %s", addr)
		}
	})
}

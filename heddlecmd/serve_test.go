package heddlecmd

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeCommand runs `heddle serve` on 127.0.0.1: it serves the probes,
// holds connections to the configuration's serve.limits (a client that
// stalls in its header is disconnected at read_header_timeout_ms) and to
// serve.hosts (a foreign Host name is refused, one of serve.hosts is not),
// and on SIGTERM drains and exits 0.
func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"config/api.yaml":     "serve:\n  auth: {kind: none}\n  hosts: [heddle.test]\n  limits: {read_header_timeout_ms: 300}\nai: {}\n",
		"agents/a/agent.yaml": "capabilities: []\n",
	})
	t.Chdir(dir)
	out, w := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		exit <- Run([]string{"serve", "--listen", "127.0.0.1:0"}, w, io.Discard, Options{})
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "heddle: serving on ")
	if !ok {
		t.Fatalf("serve printed %q", line)
	}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.Transport.(*http.Transport).CloseIdleConnections()
	get := func(path, host string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if host != "" {
			req.Host = host
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, c := range []struct {
		path, host string
		want       int
	}{{"/livez", "", 200}, {"/v1/agents", "", 200}, {"/v1/agents", "heddle.test:8080", 200}, {"/v1/agents", "evil.example", 403}, {"/livez", "evil.example", 200}} {
		if got := get(c.path, c.host); got != c.want {
			t.Errorf("GET %s, Host %q: %d, want %d", c.path, c.host, got, c.want)
		}
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_, _ = io.WriteString(conn, "GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.Copy(io.Discard, conn)
	var ne net.Error
	if d := time.Since(start); (errors.As(err, &ne) && ne.Timeout()) || d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("a stalled header was closed after %v (%v), want about 300ms", d, err)
	}

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != ExitOK {
			t.Errorf("serve exited %d after SIGTERM, want %d", code, ExitOK)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
}

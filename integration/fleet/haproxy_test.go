package fleet_test

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// haproxyConfig is the balancer in front of the workers.
//
// Every request is sent to the next worker in turn (balance roundrobin,
// request by request on a kept-alive connection): nothing routes a caller,
// a conversation or an MCP session to one worker, so that whatever the
// fleet keeps must be kept where every worker finds it.
//
// A worker is taken out of turn when GET /readyz does not answer 200, and
// put back when it does: one check every 200 ms, and one result decides
// (fall 1, rise 1), so that a dead worker is out within 200 ms.
//
// A request is never sent twice. retry-on conn-failure (haproxy's
// default, written out) retries only a connection that could not be made,
// before any byte of the request was sent, and option redispatch 1 sends
// each such retry to another worker: a worker that has just died costs
// nothing while the health check has not yet noticed. A call the worker
// had received when it died is not retried (empty-response is not in
// retry-on): a POST may have run its tool, and running it again is the
// caller's decision; haproxy closes the caller's connection without an
// answer. With retries 0, option redispatch does nothing, and every
// request sent to the dead worker before the check notices is answered
// 503.
//
// http-reuse never: each request opens its own connection to its worker
// (on loopback, a connect). haproxy would otherwise write a request on a
// kept connection to a worker that has just died, cannot know whether the
// worker read it, so must not retry it: one lost call for each connection
// it kept to that worker. Without reuse a dead worker
// costs only the calls it held.
//
// The timeouts are long enough for an MCP session's event streams, which
// stay open while the session lasts (the standalone GET stream).
const haproxyConfig = `global
	maxconn 1024
	stats socket {{socket}} mode 600 level admin
	log stdout format raw local0 info

defaults
	mode http
	log global
	option httplog
	timeout connect 1s
	timeout client 5m
	timeout server 5m
	timeout http-request 10s
	retries 2
	option redispatch 1
	retry-on conn-failure
	http-reuse never

frontend fleet
	bind 127.0.0.1:{{port}}
	default_backend workers

backend workers
	balance roundrobin
	option httpchk GET /readyz
	http-check expect status 200
	default-server inter 200ms fall 1 rise 1
{{servers}}`

// A balancer is haproxy running in the foreground (-db) as the test's
// child, in front of the workers.
type balancer struct {
	url    string // http://127.0.0.1:PORT
	socket string // its stats socket
	log    string // its stdout and stderr: a line per request, each check's change

	cmd  *exec.Cmd
	done chan struct{}
}

// startHAProxy writes the configuration for workers and runs haproxy on a
// free port; it returns once every worker is up in haproxy's own view and
// a request through it is answered. A port taken between choosing it and
// haproxy's bind is chosen again. The test's cleanup stops it.
func startHAProxy(t *testing.T, workers []*worker) *balancer {
	t.Helper()
	dir := t.TempDir()
	var servers strings.Builder
	for _, w := range workers {
		fmt.Fprintf(&servers, "\tserver %s %s check\n", w.name, w.addr)
	}
	for try := 1; ; try++ {
		port := freePort(t)
		b := &balancer{
			url:    "http://127.0.0.1:" + port,
			socket: filepath.Join(dir, "haproxy.sock"),
			log:    filepath.Join(dir, fmt.Sprintf("haproxy-%d.log", try)),
		}
		cfg := strings.NewReplacer("{{socket}}", b.socket, "{{port}}", port, "{{servers}}", servers.String()).Replace(haproxyConfig)
		path := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		err := b.start(t, path)
		if err == nil {
			return b
		}
		if try == 3 {
			t.Fatalf("haproxy: %v; its log:\n%s", err, tailFile(b.log, 40))
		}
	}
}

// start runs haproxy with the configuration at path and waits until the
// workers are up; on failure haproxy is stopped.
func (b *balancer) start(t *testing.T, path string) error {
	logf, err := os.Create(b.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(haproxy(), "-f", path, "-db")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.cmd, b.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(b.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-b.done:
			return fmt.Errorf("haproxy exited at start (%v)", cmd.ProcessState)
		default:
		}
		if st, err := b.states(); err == nil && allUp(st) && b.answers() {
			t.Cleanup(func() {
				b.stop()
				if t.Failed() {
					t.Logf("haproxy's log:\n%s", tailFile(b.log, 20))
				}
			})
			return nil
		}
		if time.Now().After(deadline) {
			b.stop()
			return fmt.Errorf("the workers were not up behind haproxy within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends haproxy (SIGTERM: a hard stop) and waits for it.
func (b *balancer) stop() {
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
	}
}

// answers reports whether a request through haproxy is answered 200.
func (b *balancer) answers() bool {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(b.url + "/readyz")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// states is each worker's state as haproxy's health check sees it (UP,
// DOWN, …), read from its stats socket.
func (b *balancer) states() (map[string]string, error) {
	c, err := net.DialTimeout("unix", b.socket, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "show stat\n"); err != nil {
		return nil, err
	}
	r := csv.NewReader(bufio.NewReader(c))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || len(rows[0]) == 0 {
		return nil, fmt.Errorf("haproxy's stats are empty")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[strings.TrimPrefix(name, "# ")] = i
	}
	px, sv, status := col["pxname"], col["svname"], col["status"]
	out := map[string]string{}
	for _, row := range rows[1:] {
		if len(row) > status && row[px] == "workers" && row[sv] != "BACKEND" {
			out[row[sv]] = row[status]
		}
	}
	return out, nil
}

// waitState polls haproxy's view until worker name is in state (UP,
// DOWN) and returns how long that took, or fails after d.
func (b *balancer) waitState(name, state string, d time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		st, err := b.states()
		if err == nil && st[name] == state {
			return time.Since(start), nil
		}
		if time.Since(start) > d {
			return 0, fmt.Errorf("haproxy saw %s as %q after %v, want %s (%v)", name, st[name], d, state, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allUp(st map[string]string) bool {
	if len(st) == 0 {
		return false
	}
	for _, s := range st {
		if s != "UP" {
			return false
		}
	}
	return true
}

func allDown(st map[string]string) bool {
	if len(st) == 0 {
		return false
	}
	for _, s := range st {
		if s != "DOWN" {
			return false
		}
	}
	return true
}

// freePort is a port of 127.0.0.1 that nothing listened on a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

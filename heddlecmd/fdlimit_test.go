package heddlecmd

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/heddlehq/heddle/serve"
)

// fdLimit is the open-file limit (RLIMIT_NOFILE) TestServeProbesUnderFDExhaustion
// runs heddle serve under, and stalledBodies the connections it opens that
// send a call's header and never its body: more than the worker may hold.
const (
	fdLimit       = 400
	stalledBodies = 450
	probeRounds   = 20
	probeWithin   = time.Second
)

// TestServeProbesUnderFDExhaustion runs heddle serve under prlimit
// --nofile=400 and opens 450 connections that each send a call's header
// with a Content-Length and never the body. /livez still answers every one
// of 20 probes, each within a second, on serve.probes.listen and on the
// main listener: the worker holds fewer connections than its file limit
// allows (the connection idle or stalled longest makes room for a new
// one), so its accept loop never meets EMFILE.
func TestServeProbesUnderFDExhaustion(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		if os.Getenv("CI") == "true" && runtime.GOOS == "linux" {
			t.Fatal("prlimit (util-linux) is required under CI=true: none on PATH")
		}
		t.Skip("prlimit (util-linux) is not on PATH: the worker cannot be run under a file limit")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		// A stalled body holds its connection for read_timeout_ms: longer
		// than the test.
		"config/api.yaml": "serve:\n  auth: {kind: none}\n  limits: {read_timeout_ms: 120000}\n  probes: {listen: 127.0.0.1:0}\n" +
			"ai:\n  mcp_servers:\n    srv: {transport: stdio, command: " + strconv.Quote(testmcpBin) + "}\n",
		"agents/a/agent.yaml": "capabilities: [{kind: mcp, server: srv}]\n",
	})
	heddle, err := exec.LookPath("heddle")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prlimit, "--nofile="+strconv.Itoa(fdLimit), heddle, "serve", "--listen", "127.0.0.1:0")
	cmd.Dir = dir
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	lines := bufio.NewReader(out)
	main := servedAddr(t, lines, "heddle: serving on http://")
	probes := servedAddr(t, lines, "heddle: probes on http://")
	go func() {
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(exited)
	}()

	for i := range stalledBodies {
		c, err := net.DialTimeout("tcp", main, 5*time.Second)
		if err != nil {
			t.Fatalf("stalled connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := fmt.Fprintf(c, "POST /v1/agents/a/tools/echo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", main); err != nil {
			t.Fatalf("stalled connection %d: %v", i, err)
		}
	}
	// The worker takes in what it can hold; past serve.StallAge a new
	// connection may close a stalled one for its place.
	time.Sleep(serve.StallAge + 500*time.Millisecond)

	for _, l := range []struct{ name, addr string }{{"serve.probes.listen", probes}, {"the main listener", main}} {
		var took []time.Duration
		failed := 0
		for i := 0; i < probeRounds && failed < 3; i++ {
			d, err := livez(l.addr, probeWithin)
			if err != nil {
				t.Errorf("/livez %d on %s: %v", i, l.name, err)
				failed++
				continue
			}
			took = append(took, d)
		}
		if len(took) > 0 {
			slices.Sort(took)
			t.Logf("/livez on %s with %d stalled bodies under --nofile=%d: %d of %d answered, median %v, slowest %v",
				l.name, stalledBodies, fdLimit, len(took), probeRounds, took[len(took)/2], took[len(took)-1])
		}
	}
	if s := stderr.String(); strings.Contains(s, "too many open files") {
		t.Errorf("the worker ran out of file descriptors:\n%s", s)
	}
}

// servedAddr reads the line of heddle serve's standard output that starts
// with prefix, and returns the address after it.
func servedAddr(t *testing.T, r *bufio.Reader, prefix string) string {
	t.Helper()
	line, err := r.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if err != nil || !ok {
		t.Fatalf("serve printed %q (%v), want a line starting %q", line, err, prefix)
	}
	return addr
}

// livez sends GET /livez on a connection of its own and reads a 200 within
// d, dial included; it returns how long that took.
func livez(addr string, d time.Duration) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(start.Add(d))
	if _, err := io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, fmt.Errorf("no answer within %v: %w", d, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", res.StatusCode)
	}
	return time.Since(start), nil
}

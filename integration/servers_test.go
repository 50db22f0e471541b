package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/syncbuf"
)

// announcePrefix starts the line listen-localhost.cjs writes to stderr once
// a server listens (with LISTEN_LOCALHOST_ANNOUNCE=1).
const announcePrefix = "listen-localhost: listening on "

// ownAnnouncePrefix starts the line a server that binds 127.0.0.1 itself
// (integration/oidc) writes once it listens; the preload does not announce
// a bind it leaves alone.
const ownAnnouncePrefix = "listening http://"

// startNodeHTTP starts a node HTTP server that reads its port from $PORT
// (server-everything's sse and streamableHttp modes), on 127.0.0.1 and a
// port the kernel chooses: PORT=0, and the listen-localhost preload binds
// loopback and announces the address. It returns "127.0.0.1:PORT". The
// server runs in its own process group, which the test kills when it ends;
// the cleanup fails the test if any process of the group survives.
func startNodeHTTP(t *testing.T, script string, args ...string) string {
	t.Helper()
	return startNodeHTTPEnv(t, nil, script, args...)
}

// startNodeHTTPEnv is startNodeHTTP with env (NAME=value) added to the
// server's environment.
func startNodeHTTPEnv(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	node := Need(t, "node")
	preload := Need(t, "listen-localhost")

	cmd := exec.Command(node, append([]string{"-r", preload, script}, args...)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"PORT=0",
		"LISTEN_LOCALHOST_ANNOUNCE=1",
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = t.TempDir()
	// Its own group, so the cleanup kills everything it starts; SIGKILL if
	// the test binary dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out syncbuf.Buffer
	// stdout and stderr are read as one stream: the preload announces the
	// address on stderr, a server that binds loopback itself on stdout.
	output, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		output.Close()
		t.Fatalf("starting %s: %v", script, err)
	}
	self, _ := readStat(cmd.Process.Pid)
	addrc := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer output.Close()
		sc := bufio.NewScanner(output)
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			a, ok := strings.CutPrefix(line, announcePrefix)
			if !ok {
				a, ok = strings.CutPrefix(line, ownAnnouncePrefix)
			}
			if ok {
				select {
				case addrc <- a:
				default:
				}
			}
		}
	}()

	t.Cleanup(func() {
		pgid := cmd.Process.Pid
		group := append(processGroup(pgid), proc{pgid, self.start})
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-drained:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-drained
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // anything that ignored SIGTERM
		_ = cmd.Wait()
		requireGone(t, group, 10*time.Second)
		if t.Failed() {
			t.Logf("%s output:\n%s", script, out.String())
		}
	})

	var addr string
	select {
	case addr = <-addrc:
	case <-drained:
		t.Fatalf("%s exited before listening:\n%s", script, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30s:\n%s", script, out.String())
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("server listens on %s, want 127.0.0.1", addr)
	}
	port, err := strconv.Atoi(strings.TrimPrefix(addr, "127.0.0.1:"))
	if err != nil {
		t.Fatalf("bad address %q", addr)
	}
	// The preload works only if no listener of the server escaped it.
	if bad := nonLoopbackListeners(port); len(bad) > 0 {
		t.Fatalf("port %d is also listened on %v, not only on loopback", port, bad)
	}
	return addr
}

// nonLoopbackListeners lists listening TCP sockets on port whose address is
// not 127.0.0.1 or ::1, from /proc/net/tcp and /proc/net/tcp6.
func nonLoopbackListeners(port int) []string {
	const listen = "0A"
	loopback := map[string]bool{
		"0100007F":                         true, // 127.0.0.1
		"00000000000000000000000001000000": true, // ::1
	}
	var bad []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != listen {
				continue
			}
			ip, hexPort, ok := strings.Cut(f[1], ":")
			if !ok {
				continue
			}
			if p, err := strconv.ParseUint(hexPort, 16, 16); err != nil || int(p) != port {
				continue
			}
			if !loopback[ip] {
				bad = append(bad, fmt.Sprintf("%s %s", file, f[1]))
			}
		}
	}
	return bad
}

//go:build soak

package soak

import (
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Chaos's pace: a step, then a pause, one after another.
const (
	chaosPause = 2 * time.Second // between two steps
	downFor    = time.Second     // an HTTP server killed stays away this long
	hangFor    = 3 * time.Second // SIGSTOP to SIGCONT: past timeout_ms
	// youngest is the age below which a stdio server is not hung: a
	// server still in its handshake is start-up's case, not this one's.
	youngest = time.Second
)

// event is one thing chaos did.
type event struct {
	At     time.Duration `json:"at_ns"` // since the soak began
	Action string        `json:"action"`
	Target string        `json:"target"`
	Detail string        `json:"detail,omitempty"`
	Failed bool          `json:"failed,omitempty"`
}

// chaos kills servers, hangs them and reloads serve's configuration, one
// step at a time, in a fixed cycle.
type chaos struct {
	servePID int
	https    map[string]*httpServer
	begin    time.Time
	// reload rewrites the configuration for round and has serve reload
	// it; it says how it went.
	reload func(round int) (string, error)

	mu     sync.Mutex
	events []event
	stdio  map[int]time.Time // every stdio server seen, and when first
	round  int
}

// hangTargets are the servers hung in turn: every transport.
var hangTargets = []string{"s1", "h1", "e1", "s2", "h2", "e2"}

// run makes chaos until end, at most one step a second; every server it
// stopped is running again when it returns.
func (c *chaos) run(end time.Time) {
	steps := []func(i int){
		c.killStdio,
		c.hang,
		c.reloadStep,
		func(i int) { c.killHTTP([]string{"h1", "h2"}[i%2]) },
		func(i int) { c.killHTTP([]string{"e1", "e2"}[i%2]) },
	}
	maxSteps := int(time.Until(end)/time.Second) + 1
	for i := 0; i < maxSteps && time.Now().Before(end); i++ {
		steps[i%len(steps)](i / len(steps))
		c.noteStdio()
		time.Sleep(min(chaosPause, max(0, time.Until(end))))
	}
}

func (c *chaos) record(action, target, detail string, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, event{At: time.Since(c.begin), Action: action, Target: target, Detail: detail, Failed: failed})
}

// noteStdio records the stdio servers running now and returns them.
func (c *chaos) noteStdio() map[string]int {
	now := stdioServers(c.servePID)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pid := range now {
		if _, ok := c.stdio[pid]; !ok {
			c.stdio[pid] = time.Now()
		}
	}
	return now
}

// stdioSeen lists every stdio server pid chaos saw.
func (c *chaos) stdioSeen() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for pid := range c.stdio {
		out = append(out, pid)
	}
	return out
}

// killStdio sends SIGKILL to a stdio server, s1 and s2 in turn, and waits
// for serve's supervisor to start its next process.
func (c *chaos) killStdio(i int) {
	name := []string{"s1", "s2"}[i%2]
	pid := c.noteStdio()[name]
	if pid == 0 {
		c.record("kill", name, "not running", true)
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	start := time.Now()
	for time.Since(start) < 10*time.Second {
		if next := c.noteStdio()[name]; next != 0 && next != pid {
			c.record("kill", name, fmt.Sprintf("SIGKILL pid %d; pid %d started %v later", pid, next, time.Since(start).Round(time.Millisecond)), false)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.record("kill", name, fmt.Sprintf("SIGKILL pid %d; no new process within 10s", pid), true)
}

// killHTTP sends SIGKILL to an HTTP or SSE server, and starts it again on
// the same address downFor later.
func (c *chaos) killHTTP(name string) {
	s := c.https[name]
	pid := s.pid()
	s.kill()
	time.Sleep(downFor)
	if err := s.start(); err != nil {
		c.record("kill", name, fmt.Sprintf("SIGKILL pid %d; restart failed: %v", pid, err), true)
		return
	}
	c.record("kill", name, fmt.Sprintf("SIGKILL pid %d; pid %d on %s after %v", pid, s.pid(), s.addr, downFor), false)
}

// hang stops a server with SIGSTOP for hangFor, then lets it go on with
// SIGCONT: calls to it meanwhile meet its timeout_ms.
func (c *chaos) hang(i int) {
	name := hangTargets[i%len(hangTargets)]
	var pid int
	if s, ok := c.https[name]; ok {
		pid = -s.pid() // its process group
	} else {
		pid = c.noteStdio()[name]
		c.mu.Lock()
		young := time.Since(c.stdio[pid]) < youngest
		c.mu.Unlock()
		if pid == 0 || young {
			c.record("hang", name, "not running, or too young: skipped", false)
			return
		}
	}
	if pid == 0 {
		c.record("hang", name, "not running", true)
		return
	}
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	time.Sleep(hangFor)
	_ = syscall.Kill(pid, syscall.SIGCONT)
	c.record("hang", name, "SIGSTOP pid "+strconv.Itoa(abs(pid))+" for "+hangFor.String()+", then SIGCONT", false)
}

func abs(n int) int { return max(n, -n) }

// reloadStep rewrites the configuration and reloads it.
func (c *chaos) reloadStep(int) {
	c.mu.Lock()
	c.round++
	round := c.round
	c.mu.Unlock()
	detail, err := c.reload(round)
	if err != nil {
		c.record("reload", "serve", err.Error(), true)
		return
	}
	c.record("reload", "serve", detail, false)
}

// summary counts the events by action, and the failed ones.
func (c *chaos) summary() (map[string]int, []event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := map[string]int{}
	var failed []event
	for _, e := range c.events {
		counts[e.Action]++
		if e.Failed {
			failed = append(failed, e)
		}
	}
	return counts, failed
}

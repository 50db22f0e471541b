package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// proc identifies one process across pid reuse: its pid and its start time
// (in clock ticks since boot, from /proc/PID/stat).
type proc struct {
	pid   int
	start uint64
}

func (p proc) String() string { return strconv.Itoa(p.pid) }

// procStat is what the tests read from /proc/PID/stat.
type procStat struct {
	state byte
	ppid  int
	pgrp  int
	start uint64
	comm  string
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	// "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime …"; comm may hold spaces and parentheses.
	lp, rp := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if lp < 0 || rp < lp {
		return procStat{}, false
	}
	f := strings.Fields(string(b[rp+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	var s procStat
	s.comm = string(b[lp+1 : rp])
	s.state = f[0][0]
	s.ppid, _ = strconv.Atoi(f[1])
	s.pgrp, _ = strconv.Atoi(f[2])
	s.start, _ = strconv.ParseUint(f[19], 10, 64)
	return s, true
}

// pids lists every process visible in /proc.
func pids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// procsWithEnv finds the processes whose environment holds kv ("NAME=value").
// Processes of other users, whose environment cannot be read, are skipped.
func procsWithEnv(kv string) []proc {
	var out []proc
	for _, pid := range pids() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if string(v) == kv {
				if st, ok := readStat(pid); ok {
					out = append(out, proc{pid, st.start})
				}
				break
			}
		}
	}
	return out
}

// processGroup lists the members of process group pgid.
func processGroup(pgid int) []proc {
	var out []proc
	for _, pid := range pids() {
		if st, ok := readStat(pid); ok && st.pgrp == pgid {
			out = append(out, proc{pid, st.start})
		}
	}
	return out
}

// alive reports whether p still exists. A zombie that this test process
// must reap counts as alive (its exec.Cmd was never waited for); one whose
// parent is another process is dead to us.
func (p proc) alive() (bool, string) {
	st, ok := readStat(p.pid)
	if !ok || st.start != p.start {
		return false, ""
	}
	if st.state == 'Z' && st.ppid != os.Getpid() {
		return false, ""
	}
	return true, fmt.Sprintf("pid %d (%s) state %c ppid %d pgrp %d", p.pid, st.comm, st.state, st.ppid, st.pgrp)
}

// requireGone waits until every process of ps has exited, and fails the
// test naming those that have not after timeout.
func requireGone(t testing.TB, ps []proc, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var left []string
		for _, p := range ps {
			if ok, desc := p.alive(); ok {
				left = append(left, desc)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d process(es) still running %v after the test stopped them:\n  %s", len(left), timeout, strings.Join(left, "\n  "))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

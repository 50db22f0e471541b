// Package proctest tells tests which processes are alive, from /proc: a
// child a test started, the descendants of a worker, what is left after a
// worker was killed. A zombie (exited, not yet reaped) counts as gone.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ParentOf is the parent of pid when pid is alive and not a zombie.
func ParentOf(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 || fields[0] == "Z" {
		return 0, false
	}
	pp, err := strconv.Atoi(fields[1])
	return pp, err == nil
}

// Alive reports whether pid is a process that is not a zombie.
func Alive(pid int) bool {
	_, ok := ParentOf(pid)
	return ok
}

// Children are the live children of pid, as /proc says now.
func Children(pid int) []int { return tree()[pid] }

// Descendants are the live processes under pid, as /proc says now.
func Descendants(pid int) []int {
	children := tree()
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// WaitGone waits up to d for every pid to be gone, and returns those left.
func WaitGone(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, p := range pids {
			if Alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tree maps each live process to its live children.
func tree() map[int][]int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := ParentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	return children
}

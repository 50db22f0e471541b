//go:build soak

package soak

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/heddlehq/heddle/internal/proctest"
)

// stdioServers maps the name of each of serve's stdio servers (its
// --name) to its pid: serve's live descendants that run the test server.
func stdioServers(servePID int) map[string]int {
	out := map[string]int{}
	for _, pid := range proctest.Descendants(servePID) {
		args := cmdline(pid)
		if len(args) == 0 || args[0] != testmcpBin {
			continue
		}
		for _, a := range args[1:] {
			if name, ok := strings.CutPrefix(a, "--name="); ok {
				out[name] = pid
			}
		}
	}
	return out
}

// cmdline is pid's argument vector (nil once it is gone).
func cmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// runningBinary lists the live processes (zombies aside) whose executable
// is bin: whatever of the soak's servers is still running, wherever it
// was started from.
func runningBinary(bin string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.TrimSuffix(exe, " (deleted)") == bin && proctest.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// zombies counts pid's children that exited and were not reaped.
func zombies(pid int) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 2 && f[0] == "Z" && f[1] == strconv.Itoa(pid) {
			n++
		}
	}
	return n
}

// openFiles counts pid's open file descriptors.
func openFiles(pid int) int {
	ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return -1
	}
	return len(ents)
}

// residentBytes is pid's resident set size (VmRSS).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

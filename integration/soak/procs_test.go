//go:build soak

package soak

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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

// listeners returns the local addresses pid listens on over TCP (IPv4 and
// IPv6), as /proc/net/tcp writes them: "0100007F:1F90" is 127.0.0.1:8080.
func listeners(pid int) []string {
	inodes := map[string]bool{}
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if ino, ok := strings.CutPrefix(target, "socket:["); ok && err == nil {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "net", table))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) >= 10 && f[3] == "0A" && inodes[f[9]] {
				out = append(out, f[1])
			}
		}
	}
	return out
}

// loopbackOnly reports whether every address of listeners is 127.0.0.1.
func loopbackOnly(addrs []string) bool {
	for _, a := range addrs {
		if !strings.HasPrefix(a, "0100007F:") {
			return false
		}
	}
	return true
}

// cpuWait is how long pid's threads have waited for a CPU while they
// could run (run_delay of /proc/PID/task/TID/schedstat), summed over its
// threads: what a machine busy with other work takes from a process.
func cpuWait(pid int) time.Duration {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, _ := os.ReadDir(dir)
	var sum time.Duration
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// loadAverage is the machine's load average over the last minute.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

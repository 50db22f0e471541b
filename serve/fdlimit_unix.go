//go:build unix

package serve

import "syscall"

// fdLimit is the process's soft limit of open files (RLIMIT_NOFILE), read
// when a Server is made (Go raises it to the hard limit as the process
// starts), or 0 when it cannot be read or is unlimited.
func fdLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	if uint64(rl.Cur) >= 1<<62 { // RLIM_INFINITY, or as good as
		return 0
	}
	return uint64(rl.Cur)
}

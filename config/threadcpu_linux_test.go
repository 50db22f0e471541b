package config_test

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time, user and system, the calling thread has
// spent, and whether it could be read. The caller locks itself to its
// thread.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_THREAD, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

//go:build unix

package testmcp

import "syscall"

// processGroup returns the caller's process group id.
func processGroup() int { return syscall.Getpgrp() }

//go:build !linux

package plugin

import "syscall"

// sysProcAttr: without Linux's Pdeathsig a plugin outlives a host that is
// killed outright; heddle still kills it on Close.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(int) {}

//go:build linux

package plugin

import "syscall"

// sysProcAttr puts the plugin in its own process group (a terminal's
// signals reach heddle alone, which ends the plugin itself) and has the
// kernel SIGKILL it when heddle dies, even by SIGKILL: go-plugin does not
// watch its parent. Pdeathsig fires when the forking thread exits; Go
// threads outlive goroutines, and heddle forks from no locked thread.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills what is left of the plugin's process group (children a
// plugin may have started).
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

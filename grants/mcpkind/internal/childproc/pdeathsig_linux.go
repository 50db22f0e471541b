package childproc

import "syscall"

// dieWithWorker has the kernel kill the child (SIGKILL) when the worker's
// thread that started it ends: the parent-death signal.
func dieWithWorker(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

package chaos

import "syscall"

// childAttrs puts a child in its own process group and has Linux kill it
// when the driver dies, so that no worker or broker outlives a killed
// driver or a test binary that timed out.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

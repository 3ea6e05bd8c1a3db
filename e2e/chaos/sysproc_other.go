//go:build !linux

package chaos

import "syscall"

// childAttrs leaves a child in the driver's process group: only Linux
// gets the process group and parent-death signal of sysproc_linux.go.
func childAttrs() *syscall.SysProcAttr { return nil }

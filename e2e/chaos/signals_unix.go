//go:build unix

package chaos

import (
	"os"
	"syscall"
)

// stopSignal and contSignal stop and continue the broker in a stop fault.
var stopSignal, contSignal os.Signal = syscall.SIGSTOP, syscall.SIGCONT

// quitSignal makes a Go worker print every goroutine's stack and exit.
var quitSignal os.Signal = syscall.SIGQUIT

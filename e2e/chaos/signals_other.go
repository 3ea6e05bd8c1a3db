//go:build !unix

package chaos

import "os"

// stopSignal and contSignal are nil off unix, which has no SIGSTOP: a
// stop fault fails there.
var stopSignal, contSignal os.Signal

// quitSignal is nil off unix: a stuck worker is killed without its stacks.
var quitSignal os.Signal

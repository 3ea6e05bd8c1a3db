//go:build unix

package state

import "syscall"

// errDiskQuota is the error of a write beyond the user's disk quota.
var errDiskQuota error = syscall.EDQUOT

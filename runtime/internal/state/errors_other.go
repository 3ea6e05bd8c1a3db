//go:build !unix

package state

import "errors"

// errDiskQuota stands for EDQUOT where the platform has none; nothing
// matches it.
var errDiskQuota = errors.New("state: disk quota exceeded")

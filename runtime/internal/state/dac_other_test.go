//go:build !linux

package state

import (
	"errors"
	"os"
)

// withoutDACOverride runs fn; outside Linux it can do so for root only
// with root's permission override in place, and refuses.
func withoutDACOverride(fn func()) error {
	if os.Geteuid() == 0 {
		return errors.New("dropping root's permission override is implemented on Linux only")
	}
	fn()
	return nil
}

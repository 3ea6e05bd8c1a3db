package state

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// withoutDACOverride runs fn on an OS thread of its own whose effective
// capabilities lack CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, the ones that
// let root ignore file permissions: on that thread root is refused what the
// permission bits refuse, as any other user is (capabilities are per
// thread on Linux). The thread is never handed back to the runtime: it
// ends with the goroutine, capabilities and all.
func withoutDACOverride(fn func()) error {
	const (
		capabilityVersion3 = 0x20080522
		capDACOverride     = 1
		capDACReadSearch   = 2
	)
	type capHeader struct {
		version uint32
		pid     int32
	}
	type capData struct{ effective, permitted, inheritable uint32 }
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		hdr := capHeader{version: capabilityVersion3}
		var data [2]capData
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			errc <- fmt.Errorf("reading the thread's capabilities: %w", e)
			return
		}
		data[0].effective &^= 1<<capDACOverride | 1<<capDACReadSearch
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			errc <- fmt.Errorf("dropping the thread's permission override: %w", e)
			return
		}
		fn()
		errc <- nil
	}()
	return <-errc
}

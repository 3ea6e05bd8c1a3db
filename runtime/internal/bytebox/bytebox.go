// Package bytebox turns byte slices into interface values without one heap
// allocation each.
//
// Converting a []byte to any copies its three-word header to the heap: one
// small allocation per key and per value, which in a pass-through topology
// is half of all the allocations the runtime makes per record, and (with a
// large live heap, such as an in-process broker's) a measurable share of
// its CPU. A Boxer hands out headers from a shared chunk instead, so that
// one allocation serves hundreds of values.
//
// The interface value it builds is exactly what the compiler would build:
// a pointer to the []byte type and a pointer to a header nobody writes
// again. The chunk stays alive as long as any value points into it.
package bytebox

import "unsafe"

// chunkSize is how many headers share one allocation (12 KiB).
const chunkSize = 512

// Boxer boxes byte slices. It is not safe for concurrent use; give each
// goroutine its own.
type Boxer struct {
	free [][]byte
}

// eface is the layout of an empty interface value.
type eface struct {
	typ, data unsafe.Pointer
}

var bytesType = func() unsafe.Pointer {
	var v any = []byte(nil)
	return (*eface)(unsafe.Pointer(&v)).typ
}()

// Box returns b as an any holding a []byte; a nil b gives a nil any, as a
// missing key or value should.
func (bx *Boxer) Box(b []byte) any {
	if b == nil {
		return nil
	}
	if len(bx.free) == 0 {
		bx.free = make([][]byte, chunkSize)
	}
	slot := &bx.free[0]
	bx.free = bx.free[1:]
	*slot = b
	v := eface{typ: bytesType, data: unsafe.Pointer(slot)}
	return *(*any)(unsafe.Pointer(&v))
}

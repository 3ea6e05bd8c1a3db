package streams

import (
	"github.com/braidstream/braid/runtime/internal/bytebox"
	"github.com/twmb/franz-go/pkg/kgo"
)

// keyArena hands out the keys a task writes to its changelogs and
// pebble, sliced from one backing array per batch of records rather than
// allocated one per record. A key outlives the record that made it: the
// producer keeps it until the broker acknowledges the record, pebble's
// pending batch until the commit, a join buffer's index until the record
// expires. So nothing is handed back or reused: a chunk is garbage once
// no key in it is referenced, and a full chunk is replaced by a new one.
// The keys of a chunk are written together and mostly die together; the
// chunk is small, so that a key that lives longer (a record out of
// order in a join buffer) keeps little memory alive with it.
type keyArena struct {
	// free is the unused rest of the current chunk.
	free []byte
}

const (
	// keyChunk is the size of a chunk.
	keyChunk = 8 << 10
	// maxArenaKey is the largest key sliced from a chunk: a larger one
	// would waste much of the chunk it does not fit in.
	maxArenaKey = keyChunk / 16
)

// alloc returns an empty slice of capacity n, to append a key to.
// Appending past n reallocates rather than overwrite the next key.
func (a *keyArena) alloc(n int) []byte {
	if n > maxArenaKey {
		return make([]byte, 0, n)
	}
	if len(a.free) < n {
		a.free = make([]byte, keyChunk)
	}
	b := a.free[:0:n]
	a.free = a.free[n:]
	return b
}

// recordArena hands out the records a task produces (sink outputs and
// changelog records), from chunks rather than one allocation each, as
// keyArena does keys: the producer keeps a record until the broker
// acknowledges it, which is soon after, so a chunk's records die
// together, and none is reused.
type recordArena struct {
	free []kgo.Record
}

// recordChunk is how many records a chunk holds.
const recordChunk = 128

// alloc returns a zeroed record.
func (a *recordArena) alloc() *kgo.Record { return nextOf(&a.free, recordChunk) }

// nextOf takes the next zeroed element of the chunk *free, making a new
// chunk of n when it is used up: what every arena here hands out from.
func nextOf[T any](free *[]T, n int) *T {
	if len(*free) == 0 {
		*free = make([]T, n)
	}
	p := &(*free)[0]
	*free = (*free)[1:]
	return p
}

// headerArena hands out the slice headers that a join buffer's values
// are boxed over (see package bytebox), from chunks rather than one
// allocation per value, as keyArena does keys: a header is written once
// and never again, and a chunk is garbage once no buffered value points
// into it.
type headerArena struct {
	free [][]byte
}

// headerChunk is how many headers a chunk holds.
const headerChunk = 256

// box returns b as an any, its header copied into the arena; nil for a
// nil b, as the bytes serde decodes it.
func (a *headerArena) box(b []byte) any {
	if b == nil {
		return nil
	}
	h := nextOf(&a.free, headerChunk)
	*h = b
	return bytebox.At(h)
}

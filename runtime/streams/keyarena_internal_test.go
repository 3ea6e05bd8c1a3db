package streams

import (
	"bytes"
	"testing"
)

// TestKeyArenaKeysStayApart fills keys of many sizes from one arena,
// across chunks, and checks that none overwrote another: not when
// written, nor when one is appended to past the size it asked for.
func TestKeyArenaKeysStayApart(t *testing.T) {
	var a keyArena
	var keys [][]byte
	for i := range 2000 {
		n := i % 700 // some larger than maxArenaKey
		k := a.alloc(n)
		if len(k) != 0 || cap(k) != n {
			t.Fatalf("alloc(%d) returned len %d cap %d", n, len(k), cap(k))
		}
		keys = append(keys, append(k, bytes.Repeat([]byte{byte(i)}, n)...))
	}
	// Growing a key must copy it, not write into the next one.
	keys[10] = append(keys[10], 0xff)
	for i, k := range keys {
		want := bytes.Repeat([]byte{byte(i)}, i%700)
		if i == 10 {
			want = append(want, 0xff)
		}
		if !bytes.Equal(k, want) {
			t.Fatalf("key %d was overwritten", i)
		}
	}
}

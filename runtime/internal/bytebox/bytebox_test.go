package bytebox

import (
	"bytes"
	"runtime"
	"testing"
)

// holder stands for a fetched record: the headers At points to live in
// a larger object.
type holder struct {
	n   int
	Key []byte
}

func TestAtHoldsTheSlice(t *testing.T) {
	var boxed []any
	var want [][]byte
	for i := range 3000 {
		h := &holder{n: i, Key: []byte{byte(i), byte(i >> 8), 'x'}}
		want = append(want, h.Key)
		boxed = append(boxed, At(&h.Key))
	}
	runtime.GC() // the holders must survive while values point into them
	for i, v := range boxed {
		b, ok := v.([]byte)
		if !ok {
			t.Fatalf("value %d is %T, want []byte", i, v)
		}
		if !bytes.Equal(b, want[i]) || &b[0] != &want[i][0] {
			t.Fatalf("value %d = %v, want the very slice %v", i, b, want[i])
		}
	}
	var none []byte
	if v := At(&none); v != nil {
		t.Errorf("At(nil) = %#v, want nil", v)
	}
	empty := []byte{}
	if v := At(&empty); v == nil || len(v.([]byte)) != 0 {
		t.Errorf("At(empty) = %#v, want an empty []byte", v)
	}
}

func TestAtDoesNotAllocate(t *testing.T) {
	h := &holder{Key: []byte("value")}
	var sink any
	if allocs := testing.AllocsPerRun(1000, func() { sink = At(&h.Key) }); allocs != 0 {
		t.Errorf("%.3f allocations per At, want none", allocs)
	}
	_ = sink
}

func BenchmarkAt(b *testing.B) {
	h := &holder{Key: []byte("value")}
	var sink any
	for b.Loop() {
		sink = At(&h.Key)
	}
	_ = sink
}

func BenchmarkConvert(b *testing.B) {
	v := []byte("value")
	var sink any
	for b.Loop() {
		sink = any(v)
	}
	_ = sink
}

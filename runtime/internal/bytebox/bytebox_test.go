package bytebox

import (
	"bytes"
	"runtime"
	"testing"
)

func TestBoxHoldsTheSlice(t *testing.T) {
	var bx Boxer
	var boxed []any
	var want [][]byte
	for i := range 3 * chunkSize {
		b := []byte{byte(i), byte(i >> 8), 'x'}
		want = append(want, b)
		boxed = append(boxed, bx.Box(b))
	}
	runtime.GC() // chunks must survive while values point into them
	for i, v := range boxed {
		b, ok := v.([]byte)
		if !ok {
			t.Fatalf("value %d is %T, want []byte", i, v)
		}
		if !bytes.Equal(b, want[i]) || &b[0] != &want[i][0] {
			t.Fatalf("value %d = %v, want the very slice %v", i, b, want[i])
		}
	}
	if v := bx.Box(nil); v != nil {
		t.Errorf("Box(nil) = %#v, want nil", v)
	}
	if v := bx.Box([]byte{}); v == nil || len(v.([]byte)) != 0 {
		t.Errorf("Box(empty) = %#v, want an empty []byte", v)
	}
}

func TestBoxAllocatesOncePerChunk(t *testing.T) {
	var bx Boxer
	b := []byte("value")
	allocs := testing.AllocsPerRun(10*chunkSize, func() { _ = bx.Box(b) })
	if allocs > 0.01 {
		t.Errorf("%.3f allocations per Box, want one per %d", allocs, chunkSize)
	}
}

func BenchmarkBox(b *testing.B) {
	var bx Boxer
	v := []byte("value")
	var sink any
	for b.Loop() {
		sink = bx.Box(v)
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

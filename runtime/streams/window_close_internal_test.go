package streams

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestClosingKeys checks closingKeys against sorting each window's keys,
// over windows whose key sets change, with keys that are prefixes of
// others (whose order depends on the window start).
func TestClosingKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	w := &windowState{spec: windowSpec{kind: timeWindowKind}}
	pool := []string{"", "a", "ab", "a\xff", "b", "ba", "\x00", "\x00\x00"}
	for i := range 200 {
		pool = append(pool, string(rune('a'+r.IntN(3)))+string(rune('a'+r.IntN(3)))+string(rune('0'+i%10)))
	}
	for win := range 40 {
		start := int64(win*10_000 + r.IntN(2)*0xff00)
		ow := &openWindow{windowBounds: windowBounds{start: start, end: start + 10_000}, keys: map[string]any{}}
		for _, k := range pool {
			if r.IntN(4) > 0 || win%7 == 0 {
				kb := binary.BigEndian.AppendUint64([]byte(k), uint64(start))
				ow.keys[string(kb)] = Windowed{Key: k, Start: start}
			}
		}
		want := slices.Sorted(maps.Keys(ow.keys))
		got := slices.Clone(w.closingKeys(ow))
		if !slices.Equal(got, want) {
			t.Fatalf("window %d: closingKeys gave %d keys %q, want %d %q", win, len(got), got, len(want), want)
		}
	}
}

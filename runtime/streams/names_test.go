package streams_test

import (
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestAddedNames: Added lists what each call made, in order, with the
// names Describe shows; a mark of another Builder gives everything.
func TestAddedNames(t *testing.T) {
	b := streams.NewBuilder()
	start := b.Mark()
	left := b.Stream([]string{"left"})
	right := b.Stream([]string{"right"})
	mark := b.Mark()
	joined := left.OuterJoin(right, func(_, l, r any) (any, error) { return l, nil }, streams.JoinWindows{Before: time.Second, After: time.Second})
	join := b.Added(mark)
	wantOps := []string{"KSTREAM-WINDOWED-0000000002", "KSTREAM-WINDOWED-0000000003", "KSTREAM-OUTERTHIS-0000000004",
		"KSTREAM-OUTEROTHER-0000000005", "KSTREAM-MERGE-0000000006"}
	wantStores := []string{"KSTREAM-OUTERTHIS-0000000004-store", "KSTREAM-OUTEROTHER-0000000005-store", "KSTREAM-OUTERSHARED-0000000004-store"}
	if !slices.Equal(join.Operators, wantOps) || !slices.Equal(join.Stores, wantStores) {
		t.Errorf("join added %v, stores %v; want %v, %v", join.Operators, join.Stores, wantOps, wantStores)
	}
	if joined.Name() != "KSTREAM-MERGE-0000000006" {
		t.Errorf("joined stream is %q", joined.Name())
	}
	mark = b.Mark()
	if a := b.Added(mark); a.Operators != nil || a.Stores != nil {
		t.Errorf("nothing called, added %+v", a)
	}
	if all := b.Added(start); len(all.Operators) != 7 {
		t.Errorf("from the start: %v", all.Operators)
	}
	if other := b.Added(streams.NewBuilder().Mark()); len(other.Operators) != 7 {
		t.Errorf("another Builder's mark: %v", other.Operators)
	}
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for _, st := range topo.Stores() {
		described = append(described, st.Name)
	}
	for _, s := range wantStores {
		if !slices.Contains(described, s) {
			t.Errorf("store %s not in the topology's %v", s, described)
		}
	}
}

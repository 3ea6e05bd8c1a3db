package streams

import (
	"fmt"
	"testing"
	"time"
)

// TestFinalRowsBounded checks what finalRows keeps as keys come and go:
// a key leaves the map one close after its last row did, so that a
// stream whose keys change every window holds the keys of a few windows,
// not of every window seen; and the cache's size counts exactly what is
// held, with and without evictions, so that the budget neither drifts up
// (evicting for nothing) nor down (never evicting).
func TestFinalRowsBounded(t *testing.T) {
	const windows, perWindow = 60, 25
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"default cache", 0}, {"evicting", 8 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			b.Stream([]string{"in"}, WithSerdes(Bytes, Bytes)).GroupByKey().
				WindowedBy(Tumbling(time.Second, 200*time.Millisecond)).Emit(EmitOnWindowClose).
				Count(Materialized(StoreOptions{Name: "counts"})).ToStream().To("out")
			topo, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			d, err := NewTestDriver(topo, DriverConfig{CacheMaxBytes: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			task := d.app.taskOf[TopicPartition{"in", 0}]
			st := task.stores["counts"]
			if st.win.final == nil {
				t.Fatal("the store keeps no finalRows")
			}
			maxKeys := 0
			for w := range windows {
				for j := range perWindow {
					// Key "shared" is in every window; the others in one.
					key := fmt.Appendf(nil, "w%d-k%d", w, j)
					if j == 0 {
						key = []byte("shared")
					}
					if err := d.Pipe("in", key, []byte("v"), int64(w*1000+j*30)); err != nil {
						t.Fatal(err)
					}
				}
				fr := st.win.final
				maxKeys = max(maxKeys, len(fr.keys))
				if got, want := st.cacheBytes, finalRowsBytes(fr); got != want {
					t.Fatalf("window %d: the store counts %d bytes cached, its rows and keys take %d", w, got, want)
				}
				if task.cacheBytes != st.cacheBytes {
					t.Fatalf("window %d: the task counts %d bytes cached, its one store %d", w, task.cacheBytes, st.cacheBytes)
				}
			}
			// Held at most: the keys of the window open, the one closing
			// within its grace, and those the last close emptied.
			if maxKeys > 3*perWindow {
				t.Errorf("finalRows held up to %d keys; want at most %d, the keys of three windows", maxKeys, 3*perWindow)
			}
			if got := len(d.ReadOutput("out")); got != (windows-1)*perWindow {
				t.Errorf("%d results, want %d: every window but the last closed, each with %d keys", got, (windows-1)*perWindow, perWindow)
			}
		})
	}
}

// finalRowsBytes is what fr's keys and rows are counted to take.
func finalRowsBytes(fr *finalRows) int {
	n := 0
	for _, fk := range fr.keys {
		n += len(fk.inner) + finalKeyOverhead
	}
	for _, fw := range fr.windows {
		for _, row := range fw.rows {
			n += len(row.k.inner) + 8 + finalRowOverhead
		}
	}
	return n
}

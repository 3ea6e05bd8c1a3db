package streams

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestJoinIndexAgreesWithPebble checks that a join buffer's in-memory
// index holds what pebble holds once committed, also across segment expiry and after a
// restart rebuilt it from pebble: records of 20 keys over 10 minutes of
// event time, with 30 s windows, so that segments (of a minute) expire.
func TestJoinIndexAgreesWithPebble(t *testing.T) {
	b := NewBuilder()
	left := b.Stream([]string{"l"}, WithSerdes(String, String))
	right := b.Stream([]string{"r"}, WithSerdes(String, String))
	left.Join(right, func(_, l, r any) (any, error) { return l, nil }, JoinTimeDifference(30*time.Second, 0),
		Materialized(StoreOptions{Name: "j"})).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	check := func(d *TestDriver) {
		t.Helper()
		tk := d.tasks()[0]
		for _, name := range []string{"j-this-join-store", "j-other-join-store"} {
			st := tk.stores[name]
			for k := range 20 {
				inner := []byte(fmt.Sprintf("k%d", k))
				fromIndex := st.bufferedRecords(nil, inner, 0, 1<<62)
				fromPebble, err := st.scanBuffered(nil, inner, 0, 1<<62)
				if err != nil {
					t.Fatal(err)
				}
				str := func(rs []bufferedRecord) []string {
					var out []string
					for _, r := range rs {
						out = append(out, fmt.Sprintf("%x=%v", r.kb, r.value))
					}
					slices.Sort(out)
					return out
				}
				if a, b := str(fromIndex), str(fromPebble); !slices.Equal(a, b) {
					t.Errorf("store %s key k%d: index %v, pebble %v", name, k, a, b)
				}
			}
		}
	}
	d, err := NewTestDriver(topo, DriverConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		topic := "l"
		if i%3 == 0 {
			topic = "r"
		}
		if err := d.Pipe(topic, []byte(fmt.Sprintf("k%d", i%20)), []byte(fmt.Sprint(i)), int64(i)*1000); err != nil {
			t.Fatal(err)
		}
	}
	// The buffers write to pebble write-only: pebble has their records
	// once the commit applied them.
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	check(d)
	if n := len(d.tasks()[0].stores["j-this-join-store"].win.index); n == 0 {
		t.Fatal("the index is empty")
	}
	d.Close()
	d, err = NewTestDriver(topo, DriverConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	check(d)
}

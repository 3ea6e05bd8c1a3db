package streams_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestDriverRunsATopologyWithoutABroker pipes records through a filter,
// a re-key, a repartition and a count over two partitions: outputs,
// repartition and changelog records, store queries and taps all come from
// the real runtime code, in-process.
func TestDriverRunsATopologyWithoutABroker(t *testing.T) {
	b := streams.NewBuilder()
	big := b.Stream([]string{"orders"}, streams.WithSerdes(streams.String, streams.String)).
		Filter(func(_, v any) (bool, error) { return !strings.HasPrefix(v.(string), "small"), nil }, streams.Named("big")).
		SelectKey(func(_, v any) (any, error) { return strings.Fields(v.(string))[1], nil }, streams.Named("by-customer"))
	big.GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "per-customer", CachingDisabled: true})).
		To("counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	var taps []string
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{
		Partitions: map[string]int{"orders": 2},
		Tap: func(r streams.TapRecord) {
			if r.Node == "big" {
				taps = append(taps, fmt.Sprint(r.Value))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, v := range []string{"big ann", "small bob", "big bob", "big ann"} {
		if err := d.Pipe("orders", []byte(fmt.Sprint(i)), []byte(v), int64(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range d.ReadOutput("counts") {
		got = append(got, fmt.Sprintf("%s=%d@%d", r.Key, binary.BigEndian.Uint64(r.Value), r.Timestamp))
	}
	slices.Sort(got)
	if want := []string{"ann=1@1000", "ann=2@1003", "bob=1@1002"}; !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	if want := []string{"big ann", "big bob", "big ann"}; !slices.Equal(taps, want) {
		t.Errorf("the filter forwarded %v, want %v", taps, want)
	}
	if n := len(d.Output("test-driver-per-customer-repartition")); n != 3 {
		t.Errorf("%d repartition records, want 3", n)
	}
	if n := len(d.Output("test-driver-per-customer-changelog")); n != 3 {
		t.Errorf("%d changelog records, want 3", n)
	}
	if _, found, _ := d.Get("per-customer", "ann"); found {
		t.Error("Get sees uncommitted state")
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if v, found, err := d.Get("per-customer", "ann"); err != nil || !found || v != int64(2) {
		t.Errorf("Get(ann) = %v, %v, %v; want 2", v, found, err)
	}
	if err := d.Pipe("nope", nil, nil, 0); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("piping to an unknown topic: %v", err)
	}
	st := d.Stats()
	if len(st.Tasks) != 4 {
		t.Errorf("%d tasks, want 2 sub-topologies x 2 partitions", len(st.Tasks))
	}
}

// ExampleTestDriver runs the Kafka Streams talk's window: [100,110) with
// 10 ms of grace closes when stream time reaches 120, and a record for it
// after that is dropped.
func ExampleTestDriver() {
	b := streams.NewBuilder()
	b.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		WindowedBy(streams.Tumbling(10*time.Millisecond, 10*time.Millisecond)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "clicks-per-10ms"})).
		To("click-counts", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	for _, ts := range []int64{100, 101, 102, 111, 112, 105, 120, 105} {
		if err := d.Pipe("clicks", []byte("page-1"), []byte("click"), ts); err != nil {
			panic(err)
		}
	}
	for _, r := range d.ReadOutput("click-counts") {
		fmt.Printf("%s -> %d at %d\n", r.Key, binary.BigEndian.Uint64(r.Value), r.Timestamp)
	}
	if err := d.Commit(); err != nil {
		panic(err)
	}
	open, _ := d.OpenWindows("clicks-per-10ms")
	for _, w := range open {
		fmt.Printf("open [%d,%d) closes at %d\n", w.Start, w.End, w.ClosesAt)
	}
	fmt.Println("late drops:", d.Stats().Tasks[0].Stores[0].LateDrops)
	// Output:
	// {"key":"page-1","start":100,"end":110} -> 4 at 105
	// open [110,120) closes at 130
	// open [120,130) closes at 140
	// late drops: 1
}

// TestCachedHoppingWindows runs hopping windows with the record cache on,
// the path where a window's row is updated in the cache: every window of
// every record counts.
func TestCachedHoppingWindows(t *testing.T) {
	b := streams.NewBuilder()
	b.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		WindowedBy(streams.Hopping(10*time.Millisecond, 5*time.Millisecond, 0)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "hops"})).
		To("out", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, ts := range []int64{1, 2, 3, 12, 13, 14, 30} {
		if err := d.Pipe("in", []byte("k"), []byte("v"), ts); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range d.ReadOutput("out") {
		got = append(got, fmt.Sprintf("%s=%d", r.Key, binary.BigEndian.Uint64(r.Value)))
	}
	want := []string{
		`{"key":"k","start":0,"end":10}=3`,
		`{"key":"k","start":5,"end":15}=3`,
		`{"key":"k","start":10,"end":20}=3`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestCachedRowsAcrossCommits moves users between regions with a commit
// between every two moves: the rows a commit flushed stay cached, clean,
// and the value a row had when it became dirty again is what the
// re-grouping subtracts.
func TestCachedRowsAcrossCommits(t *testing.T) {
	b := streams.NewBuilder()
	b.Table("users", streams.WithSerdes(streams.String, streams.String)).
		GroupBy(func(_, region any) (any, any, error) { return region, region, nil }, streams.WithSerdes(streams.String, streams.String)).
		Count(streams.Materialized(streams.StoreOptions{Name: "per-region"})).
		To("region-counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{Partitions: map[string]int{"users": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	steps := []struct {
		user, region string // "" deletes the user
		want         map[string]int64
	}{
		{"ann", "north", map[string]int64{"north": 1}},
		{"bob", "north", map[string]int64{"north": 2}},
		{"ann", "south", map[string]int64{"north": 1, "south": 1}},
		{"ann", "south", map[string]int64{"north": 1, "south": 1}},
		{"ann", "east", map[string]int64{"north": 1, "south": 0, "east": 1}},
		{"bob", "", map[string]int64{"north": 0, "east": 1}},
		{"bob", "east", map[string]int64{"north": 0, "east": 2}},
	}
	for i, s := range steps {
		var value []byte
		if s.region != "" {
			value = []byte(s.region)
		}
		if err := d.Pipe("users", []byte(s.user), value, int64(1000+i)); err != nil {
			t.Fatal(err)
		}
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		for region, n := range s.want {
			v, found, err := d.Get("per-region", region)
			if err != nil {
				t.Fatal(err)
			}
			if got := int64(0); found {
				got = v.(int64)
				if got != n {
					t.Errorf("step %d (%s to %q): %s counts %d, want %d", i, s.user, s.region, region, got, n)
				}
			} else if n != 0 {
				t.Errorf("step %d (%s to %q): %s has no count, want %d", i, s.user, s.region, region, n)
			}
		}
	}
}

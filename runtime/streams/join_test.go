package streams_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// joinStep pipes one record (value "" for a deletion) and lists the
// records the join emits for it, as "key=value@timestamp".
type joinStep struct {
	topic, key, value string
	ts                int64
	want              []string
}

// concat is the joiners of the tests: "left+right", "-" for a missing
// side.
func concat(_, l, r any) (any, error) {
	side := func(v any) string {
		if v == nil {
			return "-"
		}
		return v.(string)
	}
	return side(l) + "+" + side(r), nil
}

// runJoinSteps builds a topology with build, pipes steps through it with
// a TestDriver and checks what reaches topic "out" after each step.
func runJoinSteps(t *testing.T, build func(b *streams.Builder), steps []joinStep) *streams.TestDriver {
	t.Helper()
	b := streams.NewBuilder()
	build(b)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{DefaultKeySerde: streams.String, DefaultValueSerde: streams.String})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for i, s := range steps {
		var v []byte
		if s.value != "" {
			v = []byte(s.value)
		}
		if err := d.Pipe(s.topic, []byte(s.key), v, s.ts); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		var got []string
		for _, r := range d.ReadOutput("out") {
			val := "<nil>"
			if r.Value != nil {
				val = string(r.Value)
			}
			got = append(got, fmt.Sprintf("%s=%s@%d", r.Key, val, r.Timestamp))
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("step %d (%s %s=%q@%d): emitted %q, want %q", i+1, s.topic, s.key, s.value, s.ts, got, s.want)
		}
	}
	return d
}

func out(records ...string) []string { return records }

// TestStreamTableJoin checks that a stream record joins the table row of
// its key as of its processing, that inner joins drop records without a
// row while left joins keep them, and that table updates emit nothing.
func TestStreamTableJoin(t *testing.T) {
	for _, tc := range []struct {
		name string
		left bool
		want [][]string
	}{
		{"inner", false, [][]string{nil, nil, out("A=s2+t1@30"), nil, nil}},
		{"left", true, [][]string{out("A=s1+-@10"), nil, out("A=s2+t1@30"), nil, out("A=s3+-@50")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(b *streams.Builder) {
				table := b.Table("t", streams.Materialized(streams.StoreOptions{CachingDisabled: true}))
				s := b.Stream([]string{"s"})
				if tc.left {
					s.LeftJoinTable(table, concat).To("out")
				} else {
					s.JoinTable(table, concat).To("out")
				}
			}
			inputs := []joinStep{
				{topic: "s", key: "A", value: "s1", ts: 10},
				{topic: "t", key: "A", value: "t1", ts: 20},
				{topic: "s", key: "A", value: "s2", ts: 30},
				{topic: "t", key: "A", ts: 40},
				{topic: "s", key: "A", value: "s3", ts: 50},
			}
			for i := range inputs {
				inputs[i].want = tc.want[i]
			}
			runJoinSteps(t, build, inputs)
		})
	}
}

// TestTableTableJoin checks each table-table join against results worked
// out by hand from Kafka Streams' KTableKTable*Join rules: an update on
// either side re-joins the key, and a result that disappears is deleted.
func TestTableTableJoin(t *testing.T) {
	inputs := []joinStep{
		{topic: "l", key: "A", value: "a1", ts: 10},
		{topic: "r", key: "A", value: "b1", ts: 20},
		{topic: "r", key: "B", value: "c1", ts: 30},
		{topic: "l", key: "A", value: "a2", ts: 40},
		{topic: "r", key: "A", ts: 50},
		{topic: "l", key: "A", ts: 60},
		{topic: "l", key: "B", value: "d1", ts: 70},
		{topic: "r", key: "B", ts: 80},
	}
	for _, tc := range []struct {
		name string
		join func(l, r *streams.Table) *streams.Table
		want [][]string
	}{
		{"inner", func(l, r *streams.Table) *streams.Table { return l.Join(r, concat) }, [][]string{
			nil, out("A=a1+b1@20"), nil, out("A=a2+b1@40"), out("A=<nil>@50"),
			nil, out("B=d1+c1@70"), out("B=<nil>@80"),
		}},
		{"left", func(l, r *streams.Table) *streams.Table { return l.LeftJoin(r, concat) }, [][]string{
			out("A=a1+-@10"), out("A=a1+b1@20"), nil, out("A=a2+b1@40"), out("A=a2+-@50"),
			out("A=<nil>@60"), out("B=d1+c1@70"), out("B=d1+-@80"),
		}},
		{"outer", func(l, r *streams.Table) *streams.Table { return l.OuterJoin(r, concat) }, [][]string{
			out("A=a1+-@10"), out("A=a1+b1@20"), out("B=-+c1@30"), out("A=a2+b1@40"), out("A=a2+-@50"),
			out("A=<nil>@60"), out("B=d1+c1@70"), out("B=d1+-@80"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(b *streams.Builder) {
				uncached := streams.Materialized(streams.StoreOptions{CachingDisabled: true})
				tc.join(b.Table("l", uncached), b.Table("r", uncached)).ToStream().To("out")
			}
			steps := slices.Clone(inputs)
			for i := range steps {
				steps[i].want = tc.want[i]
			}
			runJoinSteps(t, build, steps)
		})
	}
}

// TestStreamJoinsDerivedTable joins a stream with a table filtered and
// mapped with Materialized: the join reads the derived rows, so a row that
// stops passing the filter is gone for it, and a record sees the mapped
// value.
func TestStreamJoinsDerivedTable(t *testing.T) {
	build := func(b *streams.Builder) {
		uncached := streams.StoreOptions{CachingDisabled: true}
		table := b.Table("t", streams.Materialized(uncached)).
			Filter(func(_, v any) (bool, error) { return !strings.HasPrefix(v.(string), "x"), nil }, streams.Materialized(uncached)).
			MapValues(func(v any) (any, error) { return strings.ToUpper(v.(string)), nil },
				streams.Materialized(streams.StoreOptions{Name: "upper", CachingDisabled: true}))
		b.Stream([]string{"s"}).LeftJoinTable(table, concat).To("out")
	}
	d := runJoinSteps(t, build, []joinStep{
		{topic: "t", key: "A", value: "t1", ts: 10},
		{topic: "s", key: "A", value: "s1", ts: 20, want: out("A=s1+T1@20")},
		{topic: "t", key: "A", value: "xt2", ts: 30}, // filtered out: the row is deleted
		{topic: "s", key: "A", value: "s2", ts: 40, want: out("A=s2+-@40")},
		{topic: "t", key: "A", value: "t3", ts: 50},
		{topic: "s", key: "A", value: "s3", ts: 60, want: out("A=s3+T3@60")},
		{topic: "t", key: "A", ts: 70},
		{topic: "s", key: "A", value: "s4", ts: 80, want: out("A=s4+-@80")},
		{topic: "t", key: "B", value: "xb", ts: 90},
		{topic: "s", key: "B", value: "s5", ts: 100, want: out("B=s5+-@100")},
		{topic: "t", key: "C", value: "c1", ts: 110},
	})
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"A": nil, "B": nil, "C": "C1"} {
		v, found, err := d.Get("upper", key)
		if err != nil || (found && v != want) || found != (want != nil) {
			t.Errorf("Get(upper, %s) = %v, %v, %v; want %v", key, v, found, err, want)
		}
	}
	b := streams.NewBuilder()
	build(b)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if desc := topo.Describe(); !strings.Contains(desc, "(stores: [upper])") {
		t.Errorf("Describe does not list the mapped table's store:\n%s", desc)
	}
}

// TestDerivedTableStoreNames checks that a derived table materialized
// without a store name gets Kafka Streams' generated names, the store's
// before the processor's, and that Describe leaves the store out, as
// Kafka Streams does not materialize it.
func TestDerivedTableStoreNames(t *testing.T) {
	b := streams.NewBuilder()
	filtered := b.Table("t").Filter(func(_, _ any) (bool, error) { return true, nil }, streams.Materialized(streams.StoreOptions{}))
	filtered.ToStream().To("out")
	if got, want := filtered.StoreName(), "KTABLE-FILTER-STATE-STORE-0000000003"; got != want {
		t.Errorf("StoreName() = %q, want %q", got, want)
	}
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	const want = "Processor: KTABLE-FILTER-0000000004 (stores: [])"
	if desc := topo.Describe(); !strings.Contains(desc, want) {
		t.Errorf("Describe lacks %q:\n%s", want, desc)
	}
}

// TestJoinSerdesAfterMap joins streams that a Map changed, key and value:
// the join repartitions them (and a stream-stream join buffers them) in
// the serdes JoinSerdes gives, which the stream does not know after Map;
// without them the default serde (String here) cannot write the map's
// values.
func TestJoinSerdesAfterMap(t *testing.T) {
	rekey := func(b *streams.Builder, topic string) *streams.Stream {
		return b.Stream([]string{topic}, streams.WithSerdes(streams.String, streams.JSON)).Map(func(k, v any) (any, any, error) {
			return v.(map[string]any)["k"], map[string]any{"from": k}, nil
		})
	}
	joiner := func(_, l, r any) (any, error) { return fmt.Sprint(l, "+", r), nil }
	for name, build := range map[string]func(b *streams.Builder){
		"stream-table": func(b *streams.Builder) {
			rekey(b, "s").JoinTable(b.Table("t"), joiner, streams.JoinSerdes(streams.String, streams.JSON, nil)).To("out")
		},
		"stream-stream": func(b *streams.Builder) {
			rekey(b, "s").Join(rekey(b, "t"), joiner, streams.JoinTimeDifference(time.Second, 0),
				streams.JoinSerdes(streams.String, streams.JSON, streams.JSON)).To("out")
		},
	} {
		t.Run(name, func(t *testing.T) {
			tv, want := "row", "A=map[from:x]+row@20"
			if name == "stream-stream" {
				tv, want = `{"k":"A"}`, "A=map[from:x]+map[from:y]@20"
			}
			runJoinSteps(t, build, []joinStep{
				{topic: "t", key: map[bool]string{true: "y", false: "A"}[name == "stream-stream"], value: tv, ts: 10},
				{topic: "s", key: "x", value: `{"k":"A"}`, ts: 20, want: out(want)},
			})
		})
	}
}

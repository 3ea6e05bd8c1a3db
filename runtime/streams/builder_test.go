package streams_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
)

func TestBuildErrors(t *testing.T) {
	keep := func(any, any) (bool, error) { return true, nil }
	for _, tt := range []struct {
		name  string
		build func(b *streams.Builder)
		// want lists substrings of Build's error, one per mistake.
		want []string
	}{
		{
			name:  "no stream",
			build: func(*streams.Builder) {},
			want:  []string{"the topology reads no topic: call Builder.Stream"},
		},
		{
			name: "nil functions",
			build: func(b *streams.Builder) {
				s := b.Stream([]string{"in"})
				s.Filter(nil).To("o1")
				s.FilterNot(nil).To("o2")
				s.Map(nil).To("o3")
				s.MapValues(nil).To("o4")
				s.FlatMap(nil).To("o5")
				s.FlatMapValues(nil).To("o6")
				s.SelectKey(nil).To("o7")
				s.Peek(nil).To("o8")
				s.GroupBy(nil)
			},
			want: []string{
				"Filter: the function is nil",
				"FilterNot: the function is nil",
				"Map: the function is nil",
				"MapValues: the function is nil",
				"FlatMap: the function is nil",
				"FlatMapValues: the function is nil",
				"SelectKey: the function is nil",
				"Peek: the function is nil",
				"GroupBy: the function is nil",
			},
		},
		{
			name: "empty topic list",
			build: func(b *streams.Builder) {
				b.Stream(nil, streams.Named("orders-source")).To("out")
				b.Stream([]string{}).To("out")
			},
			want: []string{
				`source "orders-source": no topics given`,
				`source "KSTREAM-SOURCE-0000000002": no topics given`,
			},
		},
		{
			name: "invalid source topic names",
			build: func(b *streams.Builder) {
				b.Stream([]string{"ok", "bad topic!", "", "..", strings.Repeat("t", 250)}, streams.Named("src")).To("out")
			},
			want: []string{
				`source "src": topic name "bad topic!" contains ' '`,
				`source "src": topic name is empty`,
				`source "src": topic name ".." is not allowed`,
				`source "src": topic name "` + strings.Repeat("t", 250) + `" is longer than 249 characters`,
			},
		},
		{
			name: "invalid sink topic name",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).To("bad/topic", streams.Named("out-sink"))
			},
			want: []string{`sink "out-sink": topic name "bad/topic" contains '/'`},
		},
		{
			name: "invalid repartition name",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).Repartition(streams.Named("by customer")).To("out")
			},
			want: []string{`Repartition "by customer": topic name "by customer-repartition" contains ' '`},
		},
		{
			name: "topic read by two sources",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).To("out")
				b.Stream([]string{"other", "in"}, streams.Named("second")).To("out2")
			},
			want: []string{`source "second": topic "in" is already read by source "KSTREAM-SOURCE-0000000000"`},
		},
		{
			name: "topic listed twice by one source",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in", "in"}, streams.Named("src")).To("out")
			},
			want: []string{`source "src": topic "in" is already read by source "src"`},
		},
		{
			name: "repartition topic read twice",
			build: func(b *streams.Builder) {
				s := b.Stream([]string{"in"})
				s.Repartition(streams.Named("again")).To("o1")
				s.Repartition(streams.Named("again")).To("o2")
			},
			want: []string{
				`Repartition "again": topic "again-repartition" is already read by source "again-repartition-source"`,
				`operator name "again-repartition-filter" is used twice`,
				`operator name "again-repartition-sink" is used twice`,
				`operator name "again-repartition-source" is used twice`,
			},
		},
		{
			name: "duplicate operator names",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}, streams.Named("x")).
					Filter(keep, streams.Named("dup")).
					MapValues(identityValue, streams.Named("dup")).
					To("out", streams.Named("x"))
			},
			want: []string{`operator name "dup" is used twice`, `operator name "x" is used twice`},
		},
		{
			name: "invalid operator names",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).
					Filter(keep, streams.Named("bad\nname")).
					Peek(func(any, any) {}, streams.Named(strings.Repeat("n", 250))).
					To("out")
			},
			want: []string{
				`operator name "bad\nname" contains a control character`,
				`operator name "` + strings.Repeat("n", 250) + `" is longer than 249 characters`,
			},
		},
		{
			name: "options that do not apply",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}, streams.WithPartitions(2)).
					Filter(keep, streams.WithPartitions(3)).
					MapValues(identityValue, streams.WithSerdes(streams.String, streams.String)).
					Peek(func(any, any) {}, streams.WithTimestamps(streams.JSONTimestamp("ts"))).
					To("out", streams.WithTimestamps(streams.JSONTimestamp("ts")))
			},
			want: []string{
				"Stream: option WithPartitions does not apply to it",
				"Filter: option WithPartitions does not apply to it",
				"MapValues: option WithSerdes does not apply to it",
				"Peek: option WithTimestamps does not apply to it",
				"To: option WithTimestamps does not apply to it",
			},
		},
		{
			name: "zero option",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).Filter(keep, streams.Option{}).To("out")
			},
			want: []string{"Filter: a zero Option was given"},
		},
		{
			name: "negative partitions",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).Repartition(streams.WithPartitions(-1)).To("out")
			},
			want: []string{"Repartition: WithPartitions(-1): the partition count must be positive"},
		},
		{
			name: "default branch not last",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).Branch([]streams.Branch{
					{Name: "rest"},
					{Name: "big", Predicate: keep},
				}, streams.Named("split-"))
			},
			want: []string{`Branch "split-": the default branch "rest" (nil Predicate) must be the last`},
		},
		{
			name: "no branches",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).Branch(nil)
			},
			want: []string{`Branch "KSTREAM-BRANCH-0000000001": no branches given`},
		},
		{
			name: "branch name twice",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).Branch([]streams.Branch{
					{Name: "a", Predicate: keep},
					{Name: "a", Predicate: keep},
				}, streams.Named("split-"))
			},
			want: []string{
				`Branch "split-": branch name "split-a" is used twice`,
				`operator name "split-a" is used twice`,
			},
		},
		{
			name: "join of a derived table without Materialized",
			build: func(b *streams.Builder) {
				table := b.Table("t").Filter(keep, streams.Named("kept"))
				b.Stream([]string{"s"}).JoinTable(table, func(_, l, _ any) (any, error) { return l, nil }).To("out")
			},
			want: []string{"JoinTable: the table is not materialized: join a table from Builder.Table or an aggregation, or give its operator Materialized"},
		},
		{
			name: "merge with nil",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).Merge(nil).To("out")
			},
			want: []string{"Merge: the other stream is nil or comes from another Builder"},
		},
		{
			name: "merge across builders",
			build: func(b *streams.Builder) {
				other := streams.NewBuilder().Stream([]string{"elsewhere"})
				b.Stream([]string{"in"}).Merge(other).To("out")
			},
			want: []string{"Merge: the other stream is nil or comes from another Builder"},
		},
		{
			name: "Build twice",
			build: func(b *streams.Builder) {
				b.Stream([]string{"in"}).To("out")
				if _, err := b.Build(); err != nil {
					panic("first Build failed: " + err.Error())
				}
			},
			want: []string{"Build was already called on this Builder"},
		},
		{
			name: "every mistake at once",
			build: func(b *streams.Builder) {
				b.Stream(nil, streams.Named("empty"))
				s := b.Stream([]string{"in", "bad topic!"}, streams.Named("src"))
				b.Stream([]string{"in"}, streams.Named("again"))
				s.Filter(nil, streams.Named("f")).
					MapValues(identityValue, streams.Named("f")).
					Peek(func(any, any) {}, streams.WithPartitions(3)).
					Branch([]streams.Branch{{Name: "default"}, {Name: "x", Predicate: keep}}, streams.Named("split-"))
			},
			want: []string{
				`source "empty": no topics given`,
				`source "src": topic name "bad topic!"`,
				`source "again": topic "in" is already read by source "src"`,
				"Filter: the function is nil",
				"Peek: option WithPartitions does not apply to it",
				`Branch "split-": the default branch "default" (nil Predicate) must be the last`,
				`operator name "f" is used twice`,
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := streams.NewBuilder()
			tt.build(b)
			topo, err := b.Build()
			if err == nil {
				t.Fatalf("Build() succeeded, want an error mentioning %q", tt.want)
			}
			if topo != nil {
				t.Errorf("Build() returned a topology along with the error %v", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "building topology: ") {
				t.Errorf("Build() error %q does not start with %q", msg, "building topology: ")
			}
			for _, want := range tt.want {
				if !strings.Contains(msg, want) {
					t.Errorf("Build() error does not mention %q:\n%s", want, msg)
				}
			}
			if got := strings.Count(msg, "\n") + 1; got != len(tt.want) {
				t.Errorf("Build() reported %d problems, want %d:\n%s", got, len(tt.want), msg)
			}
		})
	}
}

func TestTopologyTopics(t *testing.T) {
	keep := func(any, any) (bool, error) { return true, nil }
	for _, tt := range []struct {
		name          string
		build         func(b *streams.Builder)
		sources       []string
		sinks         []string
		repartitions  []string // for application id "app"
		subtopologies int
	}{
		{
			name: "stateless",
			build: func(b *streams.Builder) {
				b.Stream([]string{"input"}).Filter(keep).To("output")
			},
			sources:       []string{"input"},
			sinks:         []string{"output"},
			subtopologies: 1,
		},
		{
			name: "two sources, one sink topic twice",
			build: func(b *streams.Builder) {
				b.Stream([]string{"a"}).To("x")
				b.Stream([]string{"b", "c"}).To("y")
				b.Stream([]string{"d"}).To("x")
			},
			sources:       []string{"a", "b", "c", "d"},
			sinks:         []string{"x", "y"},
			subtopologies: 3,
		},
		{
			name: "merge joins sub-topologies",
			build: func(b *streams.Builder) {
				b.Stream([]string{"a"}).Merge(b.Stream([]string{"b"})).To("out")
			},
			sources:       []string{"a", "b"},
			sinks:         []string{"out"},
			subtopologies: 1,
		},
		{
			name: "named repartition",
			build: func(b *streams.Builder) {
				src := b.Stream([]string{"orders", "returns"})
				src.To("audit")
				src.SelectKey(valueAsKey).Repartition(streams.Named("by-customer")).Filter(keep).To("out")
			},
			sources:       []string{"orders", "returns"},
			sinks:         []string{"audit", "out"},
			repartitions:  []string{"app-by-customer-repartition"},
			subtopologies: 2,
		},
		{
			name: "generated repartition",
			build: func(b *streams.Builder) {
				b.Stream([]string{"input"}).SelectKey(valueAsKey).Repartition().Filter(keep).To("output")
			},
			sources:       []string{"input"},
			sinks:         []string{"output"},
			repartitions:  []string{"app-KSTREAM-REPARTITION-0000000002-repartition"},
			subtopologies: 2,
		},
		{
			name: "name already ending in -repartition",
			build: func(b *streams.Builder) {
				b.Stream([]string{"input"}).Repartition(streams.Named("keyed-repartition")).To("output")
			},
			sources:       []string{"input"},
			sinks:         []string{"output"},
			repartitions:  []string{"app-keyed-repartition"},
			subtopologies: 2,
		},
		{
			name: "two repartitions",
			build: func(b *streams.Builder) {
				b.Stream([]string{"input"}).SelectKey(valueAsKey).Repartition(streams.Named("first")).
					SelectKey(valueAsKey).Repartition(streams.Named("second")).To("output")
			},
			sources:       []string{"input"},
			sinks:         []string{"output"},
			repartitions:  []string{"app-first-repartition", "app-second-repartition"},
			subtopologies: 3,
		},
		{
			name: "no sink",
			build: func(b *streams.Builder) {
				b.Stream([]string{"input"}).Peek(func(any, any) {})
			},
			sources:       []string{"input"},
			subtopologies: 1,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := streams.NewBuilder()
			tt.build(b)
			topo, err := b.Build()
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got := topo.SourceTopics(); !slices.Equal(got, tt.sources) {
				t.Errorf("SourceTopics() = %q, want %q", got, tt.sources)
			}
			if got := topo.SinkTopics(); !slices.Equal(got, tt.sinks) {
				t.Errorf("SinkTopics() = %q, want %q", got, tt.sinks)
			}
			if got := topo.RepartitionTopics("app"); !slices.Equal(got, tt.repartitions) {
				t.Errorf("RepartitionTopics(%q) = %q, want %q", "app", got, tt.repartitions)
			}
			if got := topo.Subtopologies(); got != tt.subtopologies {
				t.Errorf("Subtopologies() = %d, want %d", got, tt.subtopologies)
			}
			if got, want := strings.Count(topo.Describe(), "Sub-topology: "), tt.subtopologies; got != want {
				t.Errorf("Describe() shows %d sub-topologies, want %d:\n%s", got, want, topo.Describe())
			}
		})
	}
}

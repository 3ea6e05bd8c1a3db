package streams_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

func pass(any, any) (bool, error) { return true, nil }

func identityValue(v any) (any, error) { return v, nil }

func valueAsKey(_, v any) (any, error) { return v, nil }

func joinValues(_, l, r any) (any, error) { return fmt.Sprint(l, r), nil }

// describeCases builds, with Braid's DSL, the topologies whose Kafka
// Streams describe() texts are in testdata/describe; each file starts with
// the Java code it was printed from.
var describeCases = map[string]func(b *streams.Builder){
	"stateless": func(b *streams.Builder) {
		b.Stream([]string{"input"}).Filter(pass).MapValues(identityValue).To("output")
	},
	"all-stateless-ops": func(b *streams.Builder) {
		b.Stream([]string{"input"}).
			FilterNot(func(any, any) (bool, error) { return false, nil }).
			Map(func(k, v any) (any, any, error) { return k, v, nil }).
			FlatMap(func(k, v any) ([]streams.KeyValue, error) { return []streams.KeyValue{{Key: k, Value: v}}, nil }).
			FlatMapValues(func(v any) ([]any, error) { return []any{v}, nil }).
			SelectKey(func(k, _ any) (any, error) { return k, nil }).
			Peek(func(any, any) {}).
			MapValues(identityValue).
			To("output")
	},
	"named": func(b *streams.Builder) {
		b.Stream([]string{"input"}, streams.Named("orders-source")).
			Filter(pass, streams.Named("only-big")).
			MapValues(identityValue, streams.Named("to-upper")).
			To("output", streams.Named("out-sink"))
	},
	"merge": func(b *streams.Builder) {
		a := b.Stream([]string{"a"})
		a.Merge(b.Stream([]string{"b"})).To("out")
	},
	"multi-topic-source": func(b *streams.Builder) {
		b.Stream([]string{"a", "b"}).To("out")
	},
	"branch": func(b *streams.Builder) {
		branches := b.Stream([]string{"input"}).Branch([]streams.Branch{
			{Name: "big", Predicate: pass},
			{Name: "small", Predicate: pass},
			{Name: "rest"},
		}, streams.Named("split-"))
		branches["split-big"].To("out-big")
		branches["split-small"].To("out-small")
		branches["split-rest"].To("out-rest")
	},
	"repartition": func(b *streams.Builder) {
		b.Stream([]string{"input"}).SelectKey(valueAsKey).Repartition().Filter(pass).To("output")
	},
	"repartition-named": func(b *streams.Builder) {
		b.Stream([]string{"input"}).SelectKey(valueAsKey).
			Repartition(streams.Named("by-customer")).MapValues(identityValue).To("output")
	},
	"two-repartitions": func(b *streams.Builder) {
		b.Stream([]string{"input"}).SelectKey(valueAsKey).Repartition(streams.Named("first")).
			SelectKey(valueAsKey).Repartition(streams.Named("second")).To("output")
	},
	"groupby-count": func(b *streams.Builder) {
		b.Stream([]string{"input"}).GroupBy(valueAsKey).Count()
	},
	"two-sources": func(b *streams.Builder) {
		b.Stream([]string{"a"}).To("x")
		b.Stream([]string{"b"}).To("y")
	},
	"windowed-tumbling-count": func(b *streams.Builder) {
		b.Stream([]string{"in"}).GroupByKey().
			WindowedBy(streams.Tumbling(10*time.Second, 5*time.Second)).
			Count().ToStream().To("out")
	},
	"windowed-tumbling-count-emit-final": func(b *streams.Builder) {
		b.Stream([]string{"in"}).GroupByKey().
			WindowedBy(streams.Tumbling(10*time.Second, 5*time.Second)).Emit(streams.EmitOnWindowClose).
			Count().ToStream().To("out")
	},
	"windowed-sliding-count": func(b *streams.Builder) {
		b.Stream([]string{"in"}).GroupByKey().
			WindowedBy(streams.Sliding(10*time.Second, 5*time.Second)).
			Count().ToStream().To("out")
	},
	"windowed-session-count": func(b *streams.Builder) {
		b.Stream([]string{"in"}).GroupByKey().
			WindowedBy(streams.Sessions(10*time.Second, 5*time.Second)).
			Count().ToStream().To("out")
	},
	"join-stream-stream": func(b *streams.Builder) {
		b.Stream([]string{"topic"}).Join(b.Stream([]string{"other-topic"}), joinValues, streams.JoinTimeDifference(5*time.Second, 0))
	},
	"leftjoin-stream-stream": func(b *streams.Builder) {
		b.Stream([]string{"left"}).LeftJoin(b.Stream([]string{"right"}), joinValues, streams.JoinTimeDifference(5*time.Second, 0)).To("out")
	},
	"outerjoin-stream-stream-named": func(b *streams.Builder) {
		b.Stream([]string{"left"}).OuterJoin(b.Stream([]string{"right"}), joinValues, streams.JoinTimeDifference(5*time.Second, 0),
			streams.Named("pairs")).To("out")
	},
	"join-stream-stream-repartition": func(b *streams.Builder) {
		b.Stream([]string{"left"}).Map(func(k, v any) (any, any, error) { return v, k, nil }).
			Join(b.Stream([]string{"right"}), joinValues, streams.JoinTimeDifference(5*time.Second, 0)).To("out")
	},
	"leftjoin-stream-table-repartition": func(b *streams.Builder) {
		b.Stream([]string{"orders"}).SelectKey(valueAsKey).LeftJoinTable(b.Table("customers"), joinValues).To("out")
	},
	"join-table-table-materialized": func(b *streams.Builder) {
		b.Table("l").Join(b.Table("r"), joinValues, streams.Materialized(streams.StoreOptions{Name: "joined"})).ToStream().To("out")
	},
	"groupby-windowed-reduce": func(b *streams.Builder) {
		b.Stream([]string{"in"}).GroupBy(valueAsKey).
			WindowedBy(streams.Tumbling(10*time.Second, 5*time.Second)).
			Reduce(func(_, v any) (any, error) { return v, nil }).
			ToStream().To("out")
	},
}

func TestDescribeMatchesKafkaStreams(t *testing.T) {
	for name, build := range describeCases {
		t.Run(name, func(t *testing.T) {
			want := readDescribeGolden(t, name)
			b := streams.NewBuilder()
			build(b)
			topo, err := b.Build()
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got := topo.Describe(); got != want {
				t.Errorf("Describe() differs from Kafka Streams' text\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

// readDescribeGolden returns the text after the "---" line of a golden file.
func readDescribeGolden(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "describe", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(raw), "\n---\n")
	if !ok {
		t.Fatalf("%s.txt has no --- line", name)
	}
	return text
}

package streams_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestBuildErrorFields: every mistake Build reports is a *BuildError
// naming the call, the operator the call had added and the option at
// fault, as far as they are known.
func TestBuildErrorFields(t *testing.T) {
	keep := func(any, any) (bool, error) { return true, nil }
	b := streams.NewBuilder()
	s := b.Stream([]string{"in"}, streams.Named("src"))
	s.Peek(func(any, any) {}, streams.WithPartitions(3))
	s.Filter(keep, streams.Named("f")).MapValues(func(v any) (any, error) { return v, nil }, streams.Named("f"))
	s.Map(nil, streams.Named("m"))
	s.SelectKey(func(k, _ any) (any, error) { return k, nil }, streams.Named("bad\x01"))
	s.To("bad topic!", streams.Named("out"))
	_, err := b.Build()
	var list []*streams.BuildError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var be *streams.BuildError
		if !errors.As(e, &be) {
			t.Fatalf("%v is not a *BuildError", e)
		}
		list = append(list, be)
	}
	want := []streams.BuildError{
		{Method: "Peek", Option: "WithPartitions"},
		{Method: "Map", Operator: ""},
		{Method: "SelectKey", Operator: "bad\x01", Option: "Named"},
		{Method: "To", Operator: "out"},
		{Operator: "f", Option: "Named"},
	}
	if len(list) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(list), len(want), err)
	}
	for i, w := range want {
		got := list[i]
		if got.Method != w.Method || got.Operator != w.Operator || got.Option != w.Option {
			t.Errorf("error %d (%v): method %q operator %q option %q, want %q %q %q",
				i, got, got.Method, got.Operator, got.Option, w.Method, w.Operator, w.Option)
		}
	}
	var first *streams.BuildError
	if !errors.As(err, &first) || first != list[0] {
		t.Errorf("errors.As on Build's error gives %v, want the first", first)
	}
}

// A mistake in the DSL calls comes back from Build as a *BuildError: the
// call that found it, the operator concerned and the option at fault.
func ExampleBuildError() {
	b := streams.NewBuilder()
	b.Stream([]string{"orders"}).
		Peek(func(any, any) {}, streams.WithPartitions(3)).
		To("big-orders")
	_, err := b.Build()
	var be *streams.BuildError
	if errors.As(err, &be) {
		fmt.Printf("method %s, option %s\n", be.Method, be.Option)
	}
	fmt.Println(err)
	// Output:
	// method Peek, option WithPartitions
	// building topology: Peek: option WithPartitions does not apply to it
}

// TestBuildErrorBlame: each kind of mistake names, in Option and Arg, the
// option or argument at fault, for tools that map it back to what their
// users set.
func TestBuildErrorBlame(t *testing.T) {
	keep := func(any, any) (bool, error) { return true, nil }
	key := func(k, _ any) (any, error) { return k, nil }
	in := func(b *streams.Builder) *streams.Stream { return b.Stream([]string{"in"}) }
	counted := func(b *streams.Builder) *streams.WindowedStream {
		return in(b).GroupByKey().WindowedBy(streams.Tumbling(time.Minute, 0))
	}
	cases := []struct {
		name  string
		build func(b *streams.Builder)
		want  streams.BuildError
	}{
		{"bad source topic", func(b *streams.Builder) { b.Stream([]string{"bad topic!"}) },
			streams.BuildError{Method: "Stream", Operator: "KSTREAM-SOURCE-0000000000", Arg: "topics"}},
		{"no source topics", func(b *streams.Builder) { b.Stream(nil) },
			streams.BuildError{Method: "Stream", Operator: "KSTREAM-SOURCE-0000000000", Arg: "topics"}},
		{"topic read twice", func(b *streams.Builder) { in(b); b.Stream([]string{"in"}, streams.Named("again")) },
			streams.BuildError{Method: "Stream", Operator: "again", Arg: "topics"}},
		{"bad table topic", func(b *streams.Builder) { b.Table("bad topic!") },
			streams.BuildError{Method: "Table", Operator: "KSTREAM-SOURCE-0000000001", Arg: "topic"}},
		{"bad sink topic", func(b *streams.Builder) { in(b).To("", streams.Named("out")) },
			streams.BuildError{Method: "To", Operator: "out", Arg: "topic"}},
		{"bad operator name", func(b *streams.Builder) { in(b).Filter(keep, streams.Named("a\nb")) },
			streams.BuildError{Method: "Filter", Operator: "a\nb", Option: "Named"}},
		{"option not taken", func(b *streams.Builder) { in(b).Peek(func(any, any) {}, streams.WithPartitions(3)) },
			streams.BuildError{Method: "Peek", Option: "WithPartitions"}},
		{"no partitions", func(b *streams.Builder) { in(b).Repartition(streams.WithPartitions(0)) },
			streams.BuildError{Method: "Repartition", Option: "WithPartitions"}},
		{"bad repartition name", func(b *streams.Builder) { in(b).Repartition(streams.Named("bad name")) },
			streams.BuildError{Method: "Repartition", Operator: "bad name-repartition-source", Option: "Named"}},
		{"bad store name", func(b *streams.Builder) {
			in(b).GroupByKey().Count(streams.Materialized(streams.StoreOptions{Name: "bad store"}))
		}, streams.BuildError{Method: "Count", Option: "Materialized", Arg: "Name"}},
		{"store name names a repartition", func(b *streams.Builder) {
			b.Stream([]string{"x-repartition"}).SelectKey(key).GroupByKey().
				Count(streams.Materialized(streams.StoreOptions{Name: "x"}))
		}, streams.BuildError{Method: "Count", Operator: "x-repartition-source", Option: "Materialized", Arg: "Name"}},
		{"grouping names a repartition", func(b *streams.Builder) {
			b.Stream([]string{"x-repartition"}).SelectKey(key).GroupByKey(streams.Named("x")).Count()
		}, streams.BuildError{Method: "Count", Operator: "x-repartition-source"}},
		{"retention of a key-value store", func(b *streams.Builder) {
			in(b).GroupByKey().Count(streams.Materialized(streams.StoreOptions{Retention: time.Hour}))
		}, streams.BuildError{Method: "Count", Option: "Materialized", Arg: "Retention"}},
		{"retention too short", func(b *streams.Builder) {
			counted(b).Count(streams.Materialized(streams.StoreOptions{Retention: time.Second}))
		}, streams.BuildError{Method: "Windowed.Count", Option: "Materialized", Arg: "Retention"}},
		{"bad windows", func(b *streams.Builder) {
			in(b).GroupByKey().WindowedBy(streams.Tumbling(1500*time.Microsecond, 0)).Count()
		}, streams.BuildError{Method: "Windowed.Count", Arg: "windows"}},
		{"nil windows", func(b *streams.Builder) { in(b).GroupByKey().WindowedBy(nil) },
			streams.BuildError{Method: "WindowedBy", Arg: "windows"}},
		{"nil predicate", func(b *streams.Builder) { in(b).Filter(nil) },
			streams.BuildError{Method: "Filter", Arg: "pred"}},
		{"nil aggregator", func(b *streams.Builder) {
			in(b).GroupByKey().Aggregate(func() (any, error) { return 0, nil }, nil)
		}, streams.BuildError{Method: "Aggregate", Arg: "agg"}},
		{"no branches", func(b *streams.Builder) { in(b).Branch(nil) },
			streams.BuildError{Method: "Branch", Operator: "KSTREAM-BRANCH-0000000001", Arg: "branches"}},
		{"nil merge", func(b *streams.Builder) { in(b).Merge(nil) },
			streams.BuildError{Method: "Merge", Arg: "other"}},
		{"table not materialized", func(b *streams.Builder) {
			t := b.Table("t").Filter(keep)
			in(b).JoinTable(t, func(_, l, _ any) (any, error) { return l, nil })
		}, streams.BuildError{Method: "JoinTable", Arg: "table"}},
		{"bad join windows", func(b *streams.Builder) {
			in(b).Join(b.Stream([]string{"other"}), func(_, l, _ any) (any, error) { return l, nil },
				streams.JoinTimeDifference(-time.Second, 0))
		}, streams.BuildError{Method: "Join", Arg: "windows"}},
		{"join store retention", func(b *streams.Builder) {
			in(b).Join(b.Stream([]string{"other"}), func(_, l, _ any) (any, error) { return l, nil },
				streams.JoinTimeDifference(time.Second, 0), streams.Materialized(streams.StoreOptions{Retention: time.Hour}))
		}, streams.BuildError{Method: "Join", Option: "Materialized"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := streams.NewBuilder()
			c.build(b)
			_, err := b.Build()
			var got *streams.BuildError
			if !errors.As(err, &got) {
				t.Fatalf("Build: %v, want a *BuildError", err)
			}
			w := c.want
			if got.Method != w.Method || got.Operator != w.Operator || got.Option != w.Option || got.Arg != w.Arg {
				t.Errorf("%v:\nmethod %q operator %q option %q arg %q, want %q %q %q %q",
					got, got.Method, got.Operator, got.Option, got.Arg, w.Method, w.Operator, w.Option, w.Arg)
			}
		})
	}
}

package streams_test

import (
	"errors"
	"fmt"
	"testing"

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

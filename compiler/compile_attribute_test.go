package compiler

import (
	"testing"

	"github.com/braidstream/braid/designer"
)

// A Build error goes to the parameter whose argument it blames
// (streams.BuildError's Option and Arg), by the plan's record of where
// each argument came from; to the node as a whole when none made it.
func TestCompileBuildErrorParams(t *testing.T) {
	src := func(topic string) designer.Node { return node("src", "source-stream", map[string]any{"topic": topic}) }
	sink := node("sink", "sink", map[string]any{"topic": "out"})
	cases := []struct {
		name        string
		nodes       []designer.Node
		node, param string
		msg         string
	}{
		{"repartition named as a source topic", []designer.Node{src("x-repartition"),
			node("r", "repartition", map[string]any{"name": "x"}), sink}, "r", "name", "already read"},
		{"store names a repartition topic", []designer.Node{src("x-repartition"),
			node("k", "select-key", map[string]any{"key": "value"}), node("g", "group-by-key", nil),
			node("c", "count", map[string]any{"store": "x"}), node("ts", "to-stream", nil), sink}, "c", "store", "already read"},
		{"grouping names a repartition topic", []designer.Node{src("x-repartition"),
			node("k", "select-key", map[string]any{"key": "value"}), node("g", "group-by-key", map[string]any{"name": "x"}),
			node("c", "count", nil), node("ts", "to-stream", nil), sink}, "c", "", "already read"},
		{"operator name used twice", []designer.Node{src("in"),
			{ID: "f", Kind: "filter", Name: "KSTREAM-SINK-0000000002", Params: map[string]any{"predicate": "true"}}, sink},
			"sink", "", "used twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantProblem(t, problemsOf(t, design(c.nodes)), c.node, c.param, c.msg)
		})
	}
}

package designer

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestDesignNode(t *testing.T) {
	d := &Design{Nodes: []Node{{ID: "a", Kind: "peek"}, {ID: "b"}, {ID: "a", Kind: "sink"}}}
	n, ok := d.Node("a")
	if !ok || n.Kind != "peek" {
		t.Errorf("Node(a) = %v, %v; want the first a", n, ok)
	}
	n.Name = "changed"
	if d.Nodes[0].Name != "changed" {
		t.Error("Node does not point into the design")
	}
	if _, ok := d.Node("c"); ok {
		t.Error("Node(c) found")
	}
}

func TestParams(t *testing.T) {
	window := Node{Kind: "windowed-by", Params: map[string]any{"size": "1m30s", "grace": ""}}
	repart := func(v any) Node { return Node{Kind: "repartition", Params: map[string]any{"partitions": v}} }
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"string set", ParamString(Node{Kind: "source-stream", Params: map[string]any{"valueSerde": "string"}}, "valueSerde"), "string"},
		{"string default", ParamString(Node{Kind: "source-stream"}, "valueSerde"), "json"},
		{"string default of a required enum", ParamString(window, "type"), Tumbling},
		{"string none", ParamString(Node{Kind: "sink"}, "keySerde"), ""},
		{"string of an unknown kind", ParamString(Node{Kind: "nope", Params: map[string]any{"a": "b"}}, "a"), "b"},
		{"string of a number", ParamString(repart(json.Number("6")), "partitions"), "6"},
		{"string of a bool", ParamString(Node{Kind: "filter", Params: map[string]any{"predicate": true}}, "predicate"), ""},
		{"duration set", ParamDuration(window, "size"), 90 * time.Second},
		{"duration empty takes the default", ParamDuration(window, "grace"), time.Duration(0)},
		{"duration default", ParamDuration(Node{Kind: "windowed-by", Params: map[string]any{}}, "grace"), time.Duration(0)},
		{"duration invalid", ParamDuration(Node{Kind: "windowed-by", Params: map[string]any{"size": "soon"}}, "size"), time.Duration(0)},
		{"duration negative", ParamDuration(Node{Kind: "windowed-by", Params: map[string]any{"size": "-1s"}}, "size"), time.Duration(0)},
		{"duration number 0", ParamDuration(Node{Kind: "windowed-by", Params: map[string]any{"grace": json.Number("0")}}, "grace"), time.Duration(0)},
		{"int json.Number", ParamInt(repart(json.Number("6")), "partitions"), 6},
		{"int float64", ParamInt(repart(6.0), "partitions"), 6},
		{"int int", ParamInt(repart(6), "partitions"), 6},
		{"int uint8", ParamInt(repart(uint8(6)), "partitions"), 6},
		{"int fractional", ParamInt(repart(json.Number("6.5")), "partitions"), 0},
		{"int fractional float", ParamInt(repart(6.5), "partitions"), 0},
		{"int string", ParamInt(repart("6"), "partitions"), 0},
		{"int unset", ParamInt(repart(nil), "partitions"), 0},
		{"branches from JSON", ParamBranches(Node{Kind: "branch", Params: map[string]any{"branches": []any{
			map[string]any{"name": "a", "predicate": "value.x"}, map[string]any{"name": "b"}}}}),
			[]Branch{{Name: "a", Predicate: "value.x"}, {Name: "b"}}},
		{"branches from Go", ParamBranches(Node{Kind: "branch", Params: map[string]any{"branches": []Branch{{Name: "a"}}}}), []Branch{{Name: "a"}}},
		{"branches malformed", ParamBranches(Node{Kind: "branch", Params: map[string]any{"branches": "a"}}), []Branch(nil)},
		{"branches unset", ParamBranches(Node{Kind: "branch"}), []Branch(nil)},
		{"IsSet nil", IsSet(nil), false},
		{"IsSet empty", IsSet(""), false},
		{"IsSet zero", IsSet(json.Number("0")), true},
		{"IsSet false", IsSet(false), true},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
}

func TestPorts(t *testing.T) {
	branch := Node{Kind: "branch", Params: map[string]any{"branches": []Branch{{Name: "big", Predicate: "x"}, {Name: "rest"}}}}
	want := []Port{{Name: "big", Types: []DataType{Stream}}, {Name: "rest", Types: []DataType{Stream}}}
	if got := OutputPorts(branch); !reflect.DeepEqual(got, want) {
		t.Errorf("branch outputs %v, want %v", got, want)
	}
	if got := OutputPorts(Node{Kind: "filter"}); len(got) != 1 || got[0].Name != "out" || got[0].Types[0] != SameAsInput {
		t.Errorf("filter outputs %v", got)
	}
	if got := InputPorts(Node{Kind: "merge"}); len(got) != 1 || !got[0].Multiple {
		t.Errorf("merge inputs %v", got)
	}
	if OutputPorts(Node{Kind: "sink"}) != nil || InputPorts(Node{Kind: "nope"}) != nil || OutputPorts(Node{Kind: "nope"}) != nil {
		t.Error("ports where there are none")
	}
}

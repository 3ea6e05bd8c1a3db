package designer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// want is an expected problem: node, param and a part of the message.
type want struct{ node, param, msg string }

func (w want) String() string { return fmt.Sprintf("%s/%s: ...%s...", w.node, w.param, w.msg) }

// edit changes a design for a test case.
type edit func(t *testing.T, d *Design)

func node(t *testing.T, d *Design, id string) *Node {
	t.Helper()
	n, ok := d.Node(id)
	if !ok {
		t.Fatalf("no node %q", id)
	}
	return n
}

func set(id, param string, v any) edit {
	return func(t *testing.T, d *Design) {
		n := node(t, d, id)
		if n.Params == nil {
			n.Params = map[string]any{}
		}
		n.Params[param] = v
	}
}

func unset(id, param string) edit {
	return func(t *testing.T, d *Design) { delete(node(t, d, id).Params, param) }
}

func rename(id, name string) edit {
	return func(t *testing.T, d *Design) { node(t, d, id).Name = name }
}

func kind(id string, k Kind) edit {
	return func(t *testing.T, d *Design) { node(t, d, id).Kind = k }
}

func addNode(id string, k Kind, params map[string]any) edit {
	return func(t *testing.T, d *Design) {
		d.Nodes = append(d.Nodes, Node{ID: id, Kind: k, Params: params})
	}
}

func removeNode(id string) edit {
	return func(t *testing.T, d *Design) {
		var nodes []Node
		for _, n := range d.Nodes {
			if n.ID != id {
				nodes = append(nodes, n)
			}
		}
		d.Nodes = nodes
		var edges []Edge
		for _, e := range d.Edges {
			if e.From != id && e.To != id {
				edges = append(edges, e)
			}
		}
		d.Edges = edges
	}
}

// connect adds an edge; ports default to "out" and "in".
func connect(from, to string, ports ...string) edit {
	return func(t *testing.T, d *Design) {
		e := Edge{From: from, FromPort: "out", To: to, ToPort: "in"}
		if len(ports) > 0 {
			e.FromPort = ports[0]
		}
		if len(ports) > 1 {
			e.ToPort = ports[1]
		}
		d.Edges = append(d.Edges, e)
	}
}

func disconnect(from, to string) edit {
	return func(t *testing.T, d *Design) {
		var edges []Edge
		for _, e := range d.Edges {
			if e.From != from || e.To != to {
				edges = append(edges, e)
			}
		}
		if len(edges) == len(d.Edges) {
			t.Fatalf("no edge %s -> %s", from, to)
		}
		d.Edges = edges
	}
}

// padNodes adds connected peek nodes between the design's source and its
// first consumer until it has n nodes.
func padNodes(n int) edit {
	return func(t *testing.T, d *Design) {
		for i := 0; len(d.Nodes) < n; i++ {
			id := fmt.Sprintf("pad%d", i)
			d.Nodes = append(d.Nodes, Node{ID: id, Kind: "sink", Params: map[string]any{"topic": "pad-" + id}})
			d.Edges = append(d.Edges, Edge{From: "source", FromPort: "out", To: id, ToPort: "in"})
		}
	}
}

// padEdges adds edges (duplicates of the first) until the design has n.
func padEdges(n int) edit {
	return func(t *testing.T, d *Design) {
		for len(d.Edges) < n {
			d.Edges = append(d.Edges, d.Edges[0])
		}
	}
}

func designName(name string) edit {
	return func(t *testing.T, d *Design) { d.Name = name }
}

func TestValidate(t *testing.T) {
	const (
		orders   = "orders-windowed.json"
		payments = "payments-branches.json"
		credit   = "credit-per-country.json"
		sessions = "click-sessions.json"
	)
	long := strings.Repeat("a", 250)
	for _, tc := range []struct {
		name  string
		file  string
		edits []edit
		want  []want
	}{
		{"valid", orders, nil, nil},

		// The design.
		{"no name", orders, []edit{designName("")}, []want{{"", "name", "required"}}},
		{"name with spaces", orders, []edit{designName("Big orders per customer")}, nil},
		{"name with a tab", orders, []edit{designName("big\torders")}, []want{{"", "name", `control character '\t'`}}},
		{"name with a blank at the end", orders, []edit{designName("big ")}, []want{{"", "name", "must not start or end with a blank"}}},
		{"name of punctuation", orders, []edit{designName("--")}, []want{{"", "name", "a letter or a digit"}}},
		{"name too long", orders, []edit{designName(long)}, []want{{"", "name", "250 characters long; at most 120"}}},

		// The size limits: the only problem of a design over one.
		{"at the node limit", orders, []edit{padNodes(MaxNodes)}, nil},
		{"over the node limit", orders, []edit{padNodes(MaxNodes + 1), designName("")}, []want{{"", "nodes", "the design has 1001 nodes; at most 1000 are supported"}}},
		{"over the edge limit", orders, []edit{padEdges(MaxEdges + 1)}, []want{{"", "edges", "the design has 2001 edges; at most 2000 are supported"}}},

		// Node ids and kinds.
		{"duplicate id", orders, []edit{addNode("sink", "peek", nil)}, []want{
			{"sink", "", `another node has the id "sink"`}, {"sink", "", "input is not connected"}, {"sink", "", "output is not connected"}}},
		{"empty id", orders, []edit{addNode("", "sink", map[string]any{"topic": "x"})}, []want{
			{"", "", "nodes[7] has no id"}, {"", "", "input is not connected"}}},
		{"unknown kind", orders, []edit{kind("filter", "filtre")}, []want{{"filter", "", `unknown kind "filtre"`}}},
		{"no kind", orders, []edit{kind("filter", "")}, []want{{"filter", "", "has no kind"}}},

		// Parameters.
		{"unknown parameter", orders, []edit{unset("filter", "predicate"), set("filter", "predicat", "value.amount >= 50")}, []want{
			{"filter", "predicate", "required"}, {"filter", "predicat", "unknown parameter"}}},
		{"missing required", orders, []edit{unset("sink", "topic")}, []want{{"sink", "topic", "required"}}},
		{"empty string is unset", orders, []edit{set("filter", "predicate", "")}, []want{{"filter", "predicate", "required"}}},
		{"null is unset", orders, []edit{set("filter", "predicate", nil)}, []want{{"filter", "predicate", "required"}}},
		{"expression not a string", orders, []edit{set("filter", "predicate", json.Number("5"))}, []want{{"filter", "predicate", "must be a string, not the number 5"}}},
		{"blank expression", orders, []edit{set("source", "timestamp", " \n")}, []want{{"source", "timestamp", "is blank"}}},
		{"string not a string", orders, []edit{set("count", "store", true)}, []want{{"count", "store", "must be a string, not a boolean"}}},
		{"duration not parseable", orders, []edit{set("window", "grace", "5 seconds")}, []want{{"window", "grace", `"5 seconds" is not a duration`}}},
		{"duration negative", orders, []edit{set("window", "grace", "-5s")}, []want{{"window", "grace", "must not be negative"}}},
		{"duration a number", orders, []edit{set("window", "grace", json.Number("5000"))}, []want{{"window", "grace", "must be a duration such as"}}},
		{"duration the number 0", orders, []edit{set("window", "grace", json.Number("0"))}, nil},
		{"duration zero string", orders, []edit{set("window", "grace", "0")}, nil},
		{"enum", orders, []edit{set("window", "emit", "final")}, []want{{"window", "emit", `must be one of on-window-update, on-window-close, not "final"`}}},
		{"serde", orders, []edit{set("source", "valueSerde", "avro")}, []want{{"source", "valueSerde", "must be one of string, json, int64"}}},
		{"topic with a space", orders, []edit{set("sink", "topic", "big orders")}, []want{{"sink", "topic", `holds ' '`}}},
		{"topic ..", orders, []edit{set("sink", "topic", "..")}, []want{{"sink", "topic", `".." is not a valid topic name`}}},
		{"topic too long", orders, []edit{set("sink", "topic", long)}, []want{{"sink", "topic", "at most 249"}}},
		{"topic not a string", orders, []edit{set("sink", "topic", json.Number("1"))}, []want{{"sink", "topic", "must be a topic name"}}},

		// Windows.
		{"advance on a tumbling window", orders, []edit{set("window", "advance", "5s")}, []want{{"window", "advance", "applies only when type is hopping"}}},
		{"gap on a tumbling window", orders, []edit{set("window", "gap", "5s")}, []want{{"window", "gap", "applies only when type is session"}}},
		{"tumbling without size", orders, []edit{unset("window", "size")}, []want{{"window", "size", "required for tumbling windows"}}},
		{"size 0", orders, []edit{set("window", "size", "0s")}, []want{{"window", "size", "must be more than 0"}}},
		{"hopping", orders, []edit{set("window", "type", Hopping), set("window", "advance", "5s")}, nil},
		{"hopping without advance", orders, []edit{set("window", "type", Hopping)}, []want{{"window", "advance", "required for hopping windows"}}},
		{"hopping advance over size", orders, []edit{set("window", "type", Hopping), set("window", "advance", "11s")}, []want{{"window", "advance", "must not be more than the size (10s)"}}},
		{"sliding", orders, []edit{set("window", "type", Sliding)}, nil},
		{"session without gap", orders, []edit{set("window", "type", Session), unset("window", "size")}, []want{{"window", "gap", "required for session windows"}}},
		{"session with size", orders, []edit{set("window", "type", Session), set("window", "gap", "1m")}, []want{{"window", "size", "applies only when type is tumbling or hopping or sliding"}}},
		{"default window type", orders, []edit{unset("window", "type")}, nil},
		{"retention", orders, []edit{set("count", "retention", "15s")}, nil},
		{"retention too short", orders, []edit{set("count", "retention", "14s")}, []want{{"count", "retention", "must be at least the window's size plus its grace, 15s"}}},
		{"session retention too short", sessions, []edit{set("stats", "retention", "30m")}, []want{{"stats", "retention", "gap plus its grace, 31m0s"}}},
		{"retention without a window", credit, []edit{set("sum", "retention", "1h")}, []want{{"sum", "retention", "applies only to windowed aggregations"}}},

		// Edges.
		{"edge from an unknown node", orders, []edit{connect("nope", "sink")}, []want{{"sink", "", `edge into input "in" comes from unknown node "nope"`}}},
		{"edge to an unknown node", orders, []edit{connect("sink", "nope")}, []want{
			{"sink", "", `edge from output "out" goes to unknown node "nope"`}, {"sink", "", "has no outputs"}}},
		{"edge between unknown nodes", orders, []edit{connect("a", "b")}, []want{{"", "", `edge 7 goes from unknown node "a" to unknown node "b"`}}},
		{"unknown output port", orders, []edit{disconnect("source", "filter"), connect("source", "filter", "output", "in")}, []want{
			{"source", "", `no output port "output" (edge to "filter"); it has "out"`}, {"source", "", "output is not connected"}}},
		{"unknown input port", orders, []edit{disconnect("source", "filter"), connect("source", "filter", "out", "input")}, []want{
			{"filter", "", `no input port "input" (edge from "source"); it has "in"`}, {"filter", "", "input is not connected"}}},
		{"two edges into one input", orders, []edit{connect("source", "filter")}, []want{{"filter", "", "input has 2 edges; it takes one"}}},
		{"unconnected", orders, []edit{disconnect("source", "filter")}, []want{{"source", "", "output is not connected"}, {"filter", "", "input is not connected"}}},
		{"type mismatch", orders, []edit{disconnect("count", "to-stream"), connect("filter", "to-stream")}, []want{
			{"to-stream", "", `input takes a table, not a stream (from "filter")`}}},
		{"aggregation without grouping", orders, []edit{disconnect("window", "count"), connect("source", "count")}, []want{
			{"window", "", "a window needs an aggregation after it"}, {"count", "", "count needs a grouping: connect it after group-by-key, group-by or windowed-by"}}},
		{"reduce without grouping", credit, []edit{removeNode("by-country"), connect("customers", "sum")}, []want{
			{"sum", "", "reduce needs a grouping"}}},
		{"window without aggregation", orders, []edit{removeNode("count"), connect("window", "to-stream")}, []want{
			{"window", "", "a window needs an aggregation after it"}}},
		{"window without grouping", orders, []edit{removeNode("group"), connect("filter", "window")}, []want{
			{"window", "", "a window needs a grouping: connect it after group-by-key or group-by"}}},
		{"window on a grouped table", credit, []edit{disconnect("by-country", "sum"), addNode("w", "windowed-by", map[string]any{"size": "1m"}),
			connect("by-country", "w"), connect("w", "sum")}, []want{{"w", "", "only grouped streams can be windowed, not a grouped table"}}},
		{"filter passes a table", credit, []edit{disconnect("customers", "by-country"), addNode("f", "filter", map[string]any{"predicate": "true"}),
			connect("customers", "f"), connect("f", "by-country")}, nil},
		{"filter-not takes no table", credit, []edit{disconnect("customers", "by-country"), addNode("f", "filter-not", map[string]any{"predicate": "true"}),
			connect("customers", "f"), connect("f", "by-country")}, []want{{"f", "", `input takes a stream, not a table (from "customers")`}}},
		{"cycle", orders, []edit{addNode("m", "merge", nil), disconnect("source", "filter"), connect("source", "m"), connect("m", "filter"),
			connect("filter", "m")}, []want{{"filter", "", `is part of a cycle ("filter", "m")`}}},
		{"self loop", orders, []edit{addNode("m", "merge", nil), disconnect("source", "filter"), connect("source", "m"), connect("m", "filter"),
			connect("m", "m")}, []want{{"m", "", "is connected to itself"}}},

		// Branches.
		{"branches valid", payments, nil, nil},
		{"branch output unconnected", payments, []edit{disconnect("split", "small-sink")}, []want{
			{"split", "", `output "small" is not connected`}, {"small-sink", "", "input is not connected"}}},
		{"branch port unknown", payments, []edit{disconnect("split", "small-sink"), connect("split", "small-sink", "tiny", "in")}, []want{
			{"split", "", `no output port "tiny" (edge to "small-sink"); it has "big", "small", "rest"`}, {"split", "", `output "small" is not connected`}}},
		{"branches not a list", payments, []edit{set("split", "branches", "big")}, []want{{"split", "branches", "must be a list of"}}},
		{"branch with an unknown field", payments, []edit{set("split", "branches", []any{map[string]any{"name": "a", "when": "true"}})}, []want{
			{"split", "branches", `unknown field "when"`}}},
		{"branch predicate a number", payments, []edit{set("split", "branches", []any{map[string]any{"name": "a", "predicate": json.Number("1")}})}, []want{
			{"split", "branches", "predicate must be a string, not a number"}}},
		{"no branches", payments, []edit{set("split", "branches", []any{})}, []want{{"split", "branches", "needs at least one branch"}}},
		{"branch names", payments, []edit{set("split", "branches", []Branch{{Name: "big", Predicate: "a"}, {Name: "big", Predicate: "b"}, {Name: "", Predicate: "c"}, {Name: "a b", Predicate: "d"}, {Name: "rest"}})}, []want{
			{"split", "branches", `two branches are called "big"; branch 3 has no name; branch name "a b" holds ' '`}}},
		{"default branch not last", payments, []edit{set("split", "branches", []Branch{{Name: "rest"}, {Name: "big", Predicate: "a"}, {Name: "small", Predicate: "b"}})}, []want{
			{"split", "branches", `branch "rest" has no predicate: only the last branch may be the default`}}},
		{"merge takes several edges", payments, []edit{connect("payments", "merge")}, nil},

		// Aggregations.
		{"session aggregate without merger", sessions, []edit{unset("stats", "merger")}, []want{{"stats", "merger", "session windows need a merger"}}},
		{"merger without session", orders, []edit{kind("count", "aggregate"), set("count", "initializer", "0"), set("count", "aggregator", "aggregate + 1"), set("count", "merger", "agg1 + agg2")}, []want{
			{"count", "merger", "applies only after session windows"}}},
		{"merger without window", credit, []edit{kind("sum", "aggregate"), unset("sum", "reducer"), set("sum", "initializer", "0"), set("sum", "aggregator", "aggregate + value"), set("sum", "merger", "agg1 + agg2")}, []want{
			{"sum", "merger", "applies only after session windows"}}},
		{"grouped table without subtractor", credit, []edit{unset("sum", "subtractor")}, []want{{"sum", "subtractor", "required on a grouped table"}}},
		{"grouped stream with subtractor", orders, []edit{kind("count", "reduce"), set("count", "reducer", "aggregate"), set("count", "subtractor", "aggregate")}, []want{
			{"count", "subtractor", "applies only to a grouped table"}}},
		{"group-by value on a stream", orders, []edit{set("group", "value", "value.amount")}, []want{{"group", "value", "applies only when grouping a table"}}},

		// Stores of table filters and map-values.
		{"filter store on a table", credit, []edit{disconnect("customers", "by-country"), addNode("f", "filter", map[string]any{"predicate": "true", "store": "good-customers"}),
			connect("customers", "f"), connect("f", "by-country")}, nil},
		{"map-values store on a table", credit, []edit{disconnect("customers", "by-country"), addNode("m", "map-values", map[string]any{"value": "value", "store": "mapped-customers"}),
			connect("customers", "m"), connect("m", "by-country")}, nil},
		{"filter store on a stream", orders, []edit{set("filter", "store", "big-orders")}, []want{
			{"filter", "store", "applies only to a table's filter: a stream's filter keeps no state"}}},
		{"map-values store on a stream", payments, []edit{set("flag", "store", "flagged")}, []want{
			{"flag", "store", "applies only to a table's map-values: a stream's map-values keeps no state"}}},
		{"filter store name with a slash", credit, []edit{disconnect("customers", "by-country"), addNode("f", "filter", map[string]any{"predicate": "true", "store": "a/b"}),
			connect("customers", "f"), connect("f", "by-country")}, []want{{"f", "store", `"a/b" holds '/'`}}},
		{"filter store used twice", credit, []edit{disconnect("customers", "by-country"), addNode("f", "filter", map[string]any{"predicate": "true", "store": "credit-per-country"}),
			connect("customers", "f"), connect("f", "by-country")}, []want{{"f", "store", `store "credit-per-country" is also used by node "sum"`}}},
		{"map-values store not a string", credit, []edit{disconnect("customers", "by-country"), addNode("m", "map-values", map[string]any{"value": "value", "store": json.Number("1")}),
			connect("customers", "m"), connect("m", "by-country")}, []want{{"m", "store", "must be a string, not the number 1"}}},

		// Names.
		{"duplicate operator names", orders, []edit{rename("filter", "x"), rename("sink", "x")}, []want{{"sink", "name", `name "x" is also used by node "filter"`}}},
		{"duplicate operator names by parameter", orders, []edit{set("filter", "name", "x"), rename("sink", "x")}, []want{{"sink", "name", `name "x" is also used by node "filter"`}}},
		{"name parameter differs from the node's", orders, []edit{set("filter", "name", "x"), rename("filter", "y")}, []want{{"filter", "name", `is "x" but the node's name is "y"`}}},
		{"duplicate stores", sessions, []edit{set("stats", "store", "s"), addNode("c", "count", map[string]any{"store": "s"}), connect("by-user", "c"), addNode("p", "to-stream", nil), connect("c", "p"), connect("p", "sink")}, []want{
			{"sink", "", "input has 2 edges"}, {"c", "store", `store "s" is also used by node "stats"`}}},
		{"store name with a slash", orders, []edit{set("count", "store", "a/b")}, []want{{"count", "store", `"a/b" holds '/'`}}},
		{"duplicate repartition names", sessions, []edit{set("by-user", "name", "r"), kind("rekey", "repartition"), unset("rekey", "key"), set("rekey", "name", "r")}, []want{
			{"by-user", "name", `repartition name "r" is also used by node "rekey"`}}},
		{"repartition name and operator name may match", sessions, []edit{set("by-user", "name", "r"), rename("by-user", "r")}, nil},
		{"repartition partitions", sessions, []edit{kind("rekey", "repartition"), unset("rekey", "key"), set("rekey", "partitions", json.Number("6"))}, nil},
		{"repartition partitions 0", sessions, []edit{kind("rekey", "repartition"), unset("rekey", "key"), set("rekey", "partitions", json.Number("0"))}, []want{{"rekey", "partitions", "must be at least 1"}}},
		{"repartition partitions fractional", sessions, []edit{kind("rekey", "repartition"), unset("rekey", "key"), set("rekey", "partitions", json.Number("1.5"))}, []want{{"rekey", "partitions", "must be a whole number, not the number 1.5"}}},
		{"repartition partitions float64", sessions, []edit{kind("rekey", "repartition"), unset("rekey", "key"), set("rekey", "partitions", 6.0)}, nil},
		{"two sources of one topic", payments, []edit{addNode("again", "source-stream", map[string]any{"topic": "payments"}), connect("again", "merge")}, []want{
			{"again", "topic", `topic "payments" is also read by node "payments"`}}},

		// Serdes of windowed keys.
		{"windowed serde on a source", orders, []edit{set("source", "keySerde", "windowed")}, []want{{"source", "keySerde", "not for reading topics"}}},
		{"windowed value serde", orders, []edit{set("sink", "valueSerde", "windowed-json")}, []want{{"sink", "valueSerde", "not for values"}}},
		{"plain key serde on windowed keys", orders, []edit{set("sink", "keySerde", "string")}, []want{{"sink", "keySerde", "the keys here are windowed"}}},
		{"default key serde on windowed keys", orders, []edit{unset("sink", "keySerde")}, nil},
		{"windowed key serde on plain keys", payments, []edit{set("out", "keySerde", "windowed-json")}, []want{{"out", "keySerde", "the keys here are not windowed"}}},
		{"windowed keys through a merge", orders, []edit{addNode("m", "merge", nil), disconnect("to-stream", "sink"), connect("to-stream", "m"), connect("m", "sink")}, nil},

		// Order: design first, then nodes in design order, then
		// parameters as the kind declares them.
		{"order", orders, []edit{unset("sink", "topic"), set("sink", "valueSerde", "x"), set("window", "emit", "x"), designName(""), set("source", "zzz", 1), set("source", "topic", "")}, []want{
			{"", "name", "required"}, {"source", "topic", "required"}, {"source", "zzz", "unknown parameter"}, {"window", "emit", "must be one of"},
			{"sink", "topic", "required"}, {"sink", "valueSerde", "must be one of"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := readDesign(t, tc.file)
			for _, e := range tc.edits {
				e(t, d)
			}
			checkProblems(t, Validate(d), tc.want)
		})
	}
}

// checkProblems compares problems with the ones wanted, in order.
func checkProblems(t *testing.T, got Problems, want []want) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		w := want[i]
		ok = got[i].Node == w.node && got[i].Param == w.param && strings.Contains(got[i].Message, w.msg)
	}
	if !ok {
		var b strings.Builder
		for _, p := range got {
			fmt.Fprintf(&b, "\n  %s/%s: %s", p.Node, p.Param, p.Message)
		}
		t.Errorf("got%s\nwant %v", b.String(), want)
	}
	if (got.Err() == nil) != (len(got) == 0) {
		t.Errorf("Err() = %v with %d problems", got.Err(), len(got))
	}
}

func TestValidateEmpty(t *testing.T) {
	if ps := Validate(nil); len(ps) != 1 {
		t.Errorf("nil design: %v", ps)
	}
	if ps := Validate(&Design{Name: "empty"}); len(ps) != 0 {
		t.Errorf("empty design: %v", ps)
	}
}

func TestProblemText(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Node: "f1", Kind: "filter", Param: "predicate", Message: "required"}, `node "f1" (filter), parameter "predicate": required`},
		{Problem{Node: "f1", Kind: "filter", Message: "input is not connected"}, `node "f1" (filter): input is not connected`},
		{Problem{Node: "f1", Param: "predicate", Message: "syntax error"}, `node "f1", parameter "predicate": syntax error`},
		{Problem{Param: "name", Message: "required"}, `design, field "name": required`},
		{Problem{Message: "edge 1 goes nowhere"}, `design: edge 1 goes nowhere`},
		{Problem{Kind: "sink", Message: "nodes[2] has no id"}, `node (sink): nodes[2] has no id`},
	} {
		if got := tc.p.Error(); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
	ps := Problems{{Param: "name", Message: "required"}, {Node: "a", Kind: "sink", Message: "input is not connected"}}
	want := "design, field \"name\": required\nnode \"a\" (sink): input is not connected"
	if ps.Error() != want {
		t.Errorf("Problems.Error() = %q", ps.Error())
	}
	var err error = ps
	var got Problems
	if !errors.As(ps.Err(), &got) || len(got) != 2 || err.Error() != want {
		t.Errorf("Err() = %v", ps.Err())
	}
	if Problems(nil).Err() != nil {
		t.Error("no problems: Err() is not nil")
	}
	if f := ps.ForNode("a"); len(f) != 1 || f[0].Node != "a" {
		t.Errorf("ForNode: %v", f)
	}
}

func TestValidTopicName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true}, {"a.b_c-D9", true}, {strings.Repeat("x", 249), true},
		{"", false}, {".", false}, {"..", false}, {"...", true}, {strings.Repeat("x", 250), false},
		{"a b", false}, {"a/b", false}, {"é", false}, {"a\x00", false},
	} {
		if got := ValidTopicName(tc.name) == ""; got != tc.ok {
			t.Errorf("ValidTopicName(%q) ok = %v, want %v (%s)", tc.name, got, tc.ok, ValidTopicName(tc.name))
		}
	}
}

// Every kind of the catalog can be validated in a design where it is
// wired to what it takes; a sanity check of the catalog against the
// validator (ports, types, required parameters).
func TestEveryKindValidates(t *testing.T) {
	for _, k := range Catalog() {
		if k.Name == "opaque" {
			continue // flagged on purpose: see TestOpaqueIsAProblem
		}
		t.Run(string(k.Name), func(t *testing.T) {
			params := map[string]any{}
			for _, p := range k.Params {
				if !p.Required || p.Default != nil {
					continue
				}
				switch p.Type {
				case BranchesParam:
					params[p.Name] = []any{map[string]any{"name": "only"}}
				case TopicParam:
					params[p.Name] = "t-" + string(k.Name)
				default:
					params[p.Name] = p.Example
				}
			}
			if k.Name == "windowed-by" {
				params["size"] = "10s"
			}
			if k.Name == "reduce" || k.Name == "aggregate" {
				// Fed by a grouped table below: needs a subtractor.
				params["subtractor"] = "aggregate"
			}
			if k.Name == "source-table" {
				params["topic"] = "t2"
			}
			d := &Design{Name: "every-kind", Nodes: []Node{{ID: "x", Kind: k.Name, Params: params}}}
			feeders := map[DataType][]Node{
				Stream: {{ID: "s", Kind: "source-stream", Params: map[string]any{"topic": "in"}}},
				Table:  {{ID: "s", Kind: "source-table", Params: map[string]any{"topic": "in"}}},
				GroupedStream: {{ID: "s0", Kind: "source-stream", Params: map[string]any{"topic": "in"}},
					{ID: "s", Kind: "group-by-key"}},
				GroupedTable: {{ID: "s0", Kind: "source-table", Params: map[string]any{"topic": "in"}},
					{ID: "s", Kind: "group-by", Params: map[string]any{"key": "value.k"}}},
			}
			if k.Name == "stream-join" {
				params["window"] = "1m"
			}
			for j, in := range k.Inputs {
				t := in.Types[0]
				if k.Name == "reduce" || k.Name == "aggregate" || k.Name == "count" {
					t = GroupedTable
				}
				// A second input gets feeders of its own, reading
				// another topic.
				feed := slices.Clone(feeders[t])
				for i := range feed {
					feed[i].ID += strings.Repeat("'", j)
					if j > 0 && feed[i].Params["topic"] != nil {
						feed[i].Params = map[string]any{"topic": fmt.Sprintf("in%d", j)}
					}
				}
				d.Nodes = append(d.Nodes, feed...)
				for i := 1; i < len(feed); i++ {
					d.Edges = append(d.Edges, Edge{From: feed[i-1].ID, FromPort: "out", To: feed[i].ID, ToPort: "in"})
				}
				d.Edges = append(d.Edges, Edge{From: feed[len(feed)-1].ID, FromPort: "out", To: "x", ToPort: in.Name})
			}
			outs := outputPorts(k, d.Nodes[0])
			for i, out := range outs {
				id := fmt.Sprintf("o%d", i)
				var sink []Node
				switch out.Types[0] {
				case Stream, SameAsInput:
					sink = []Node{{ID: id, Kind: "sink", Params: map[string]any{"topic": "out" + id}}}
				case Table:
					sink = []Node{{ID: id, Kind: "to-stream"}, {ID: id + "s", Kind: "sink", Params: map[string]any{"topic": "out" + id}}}
				case WindowedStream, GroupedStream, GroupedTable:
					sink = []Node{{ID: id, Kind: "count"}, {ID: id + "t", Kind: "to-stream"}, {ID: id + "s", Kind: "sink", Params: map[string]any{"topic": "out" + id}}}
				case GroupedInput:
					sink = []Node{{ID: id, Kind: "count"}, {ID: id + "t", Kind: "to-stream"}, {ID: id + "s", Kind: "sink", Params: map[string]any{"topic": "out" + id}}}
				default:
					t.Fatalf("no sink for %s", out.Types[0])
				}
				d.Nodes = append(d.Nodes, sink...)
				d.Edges = append(d.Edges, Edge{From: "x", FromPort: out.Name, To: id, ToPort: "in"})
				for j := 1; j < len(sink); j++ {
					d.Edges = append(d.Edges, Edge{From: sink[j-1].ID, FromPort: "out", To: sink[j].ID, ToPort: "in"})
				}
			}
			if ps := Validate(d); len(ps) > 0 {
				data, _ := Encode(d)
				t.Errorf("problems:\n%v\n%s", ps, data)
			}
		})
	}
}

// TestOpaqueIsAProblem: a processor imported from describe() whose kind
// could not be told must be replaced before the design compiles.
func TestOpaqueIsAProblem(t *testing.T) {
	d := &Design{Name: "imported", Nodes: []Node{
		{ID: "s", Kind: "source-stream", Params: map[string]any{"topic": "in"}},
		{ID: "x", Kind: "opaque", Name: "my-processor"},
		{ID: "o", Kind: "sink", Params: map[string]any{"topic": "out"}},
	}, Edges: []Edge{{From: "s", FromPort: "out", To: "x", ToPort: "in"}, {From: "x", FromPort: "out", To: "o", ToPort: "in"}}}
	ps := Validate(d)
	if len(ps) != 1 || ps[0].Node != "x" || !strings.Contains(ps[0].Message, "replace it with a real operator") {
		t.Errorf("problems %v, want one on x saying to replace it", ps)
	}
}

package compiler

import (
	"strings"
	"testing"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// TestCompileJoinProblems: problems of join nodes the compiler finds, each
// on its node and parameter: joiners that do not compile or read what a
// joiner does not see, windows that are not whole milliseconds, and
// tables without a store to look rows up in.
func TestCompileJoinProblems(t *testing.T) {
	for _, tc := range []struct {
		name              string
		edit              func(d *designer.Design)
		node, param, want string
	}{
		{"joiner syntax", setParam("paid", "joiner", "{id: key,"), "paid", "joiner", "unexpected token EOF"},
		{"joiner reads value", setParam("enriched", "joiner", "value.amount"), "enriched", "joiner", "unknown name value (1:1)"},
		{"window in microseconds", setParam("paid", "window", "1500us"), "paid", "window", "not a whole number of milliseconds"},
		{"grace in microseconds", setParam("paid", "grace", "1ms500us"), "paid", "grace", "not a whole number of milliseconds"},
		{"a table filter joined", func(d *designer.Design) {
			d.Nodes = append(d.Nodes, node("vip", "filter", map[string]any{"predicate": "value.vip == true"}))
			reroute(d, "customers", "enriched", "vip")
			d.Edges = append(d.Edges, designer.Edge{From: "customers", FromPort: "out", To: "vip", ToPort: "in"})
		}, "enriched", "", `the table of input "table" (from "vip") has no store to look rows up in: give the filter "vip" a store`},
		{"a table map-values joined", func(d *designer.Design) {
			d.Nodes = append(d.Nodes, node("names", "map-values", map[string]any{"value": "{name: value.name}"}))
			reroute(d, "accounts", "customer-accounts", "names")
			d.Edges = append(d.Edges, designer.Edge{From: "accounts", FromPort: "out", To: "names", ToPort: "in"})
		}, "customer-accounts", "", `the table of input "right" (from "names") has no store to look rows up in: give the map-values "names" a store`},
		{"a table join without a store joined", func(d *designer.Design) {
			delete(mustNode(d, "customer-accounts").Params, "store")
			reroute(d, "customers", "enriched", "customer-accounts")
		}, "enriched", "", `give the table join "customer-accounts" a store`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := readDesign(t, "../designer/testdata/orders-joined.json")
			tc.edit(d)
			ps := problemsOf(t, d)
			wantProblem(t, ps, tc.node, tc.param, tc.want)
			if len(ps) != 1 {
				t.Errorf("want one problem:\n%s", ps)
			}
		})
	}
}

// TestCompileJoinsDerivedTables joins a table filter and a table
// map-values with stores: each is a table with a store to look rows up
// in, which the compiled design records as the node's.
func TestCompileJoinsDerivedTables(t *testing.T) {
	d := readDesign(t, "../designer/testdata/orders-joined.json")
	d.Nodes = append(d.Nodes,
		node("vip", "filter", map[string]any{"predicate": "value.vip == true", "store": "vip-customers"}),
		node("tiers", "map-values", map[string]any{"value": "{tier: value.tier}", "name": "tiers", "store": "account-tiers"}))
	reroute(d, "customers", "enriched", "vip")
	reroute(d, "accounts", "customer-accounts", "tiers")
	d.Edges = append(d.Edges,
		designer.Edge{From: "customers", FromPort: "out", To: "vip", ToPort: "in"},
		designer.Edge{From: "accounts", FromPort: "out", To: "tiers", ToPort: "in"})
	c, err := Compile(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for node, store := range map[string]string{"vip": "vip-customers", "tiers": "account-tiers"} {
		if c.Stores[node] != store || c.StoreNodes[store] != node {
			t.Errorf("node %q: store %q (StoreNodes %v), want %q", node, c.Stores[node], c.StoreNodes, store)
		}
	}
	desc := c.Topology.Describe()
	for _, want := range []string{
		"Processor: " + c.Operators["vip"] + " (stores: [vip-customers])",
		"Processor: tiers (stores: [account-tiers])",
		"Processor: " + c.Operators["enriched"] + " (stores: [vip-customers])",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc)
		}
	}
	checkNames(t, d, c)
}

func mustNode(d *designer.Design, id string) *designer.Node {
	n, ok := d.Node(id)
	if !ok {
		panic("no node " + id)
	}
	return n
}

func setParam(id, param string, v any) func(d *designer.Design) {
	return func(d *designer.Design) { mustNode(d, id).Params[param] = v }
}

// reroute makes the edge from -> to come from via instead.
func reroute(d *designer.Design, from, to, via string) {
	for i, e := range d.Edges {
		if e.From == from && e.To == to {
			d.Edges[i].From = via
		}
	}
}

// TestCompiledJoinsAfterMap runs joins whose stream input a map changed,
// key and value: the stream is repartitioned before the join (and a
// stream-stream join buffers it) in its own serdes, which the runtime no
// longer knows after the map, so the compiler names them.
func TestCompiledJoinsAfterMap(t *testing.T) {
	e := func(from, to, port string) designer.Edge {
		return designer.Edge{From: from, FromPort: "out", To: to, ToPort: port}
	}
	for kind, params := range map[designer.Kind]map[string]any{
		"stream-table-join": {"type": "left"},
		"stream-join":       {"type": "inner", "window": "5s"},
	} {
		t.Run(string(kind), func(t *testing.T) {
			right, port := node("right", "source-table", map[string]any{"topic": "right"}), "table"
			leftPort := "stream"
			if kind == "stream-join" {
				right, port, leftPort = node("right", "source-stream", map[string]any{"topic": "right"}), "right", "left"
			}
			c, err := Compile(design([]designer.Node{
				node("left", "source-stream", map[string]any{"topic": "left"}),
				node("m", "map", map[string]any{"key": "value.k", "value": "{n: value.n * 2}"}),
				right,
				node("j", kind, params),
				node("sink", "sink", map[string]any{"topic": "out"}),
			}, e("left", "m", "in"), e("m", "j", leftPort), e("right", "j", port), e("j", "sink", "in")), Options{})
			if err != nil {
				t.Fatal(err)
			}
			d, err := streams.NewTestDriver(c.Topology, streams.DriverConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Pipe("right", []byte("a"), []byte(`{"r":1}`), 1000); err != nil {
				t.Fatal(err)
			}
			if err := d.Pipe("left", []byte("x"), []byte(`{"k":"a","n":2}`), 2000); err != nil {
				t.Fatal(err)
			}
			if err := d.Commit(); err != nil {
				t.Fatal(err)
			}
			out := d.Output("out")
			if len(out) != 1 || string(out[0].Key) != "a" || string(out[0].Value) != `{"left":{"n":4},"right":{"r":1}}` {
				t.Errorf("got %v, want a={\"left\":{\"n\":4},\"right\":{\"r\":1}}", out)
			}
		})
	}
}

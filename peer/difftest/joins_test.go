package difftest

import (
	"strings"
	"testing"

	"github.com/braidstream/braid/designer"
)

// graph makes a design of nodes and edges written "from>to" or
// "from.port>to.port" (port "out" and "in" when not given).
func graph(nodes []designer.Node, edges ...string) *designer.Design {
	d := chain(nodes...)
	d.Edges = nil
	for _, e := range edges {
		from, to, _ := strings.Cut(e, ">")
		f, fp, ok := strings.Cut(from, ".")
		if !ok {
			fp = "out"
		}
		t, tp, ok := strings.Cut(to, ".")
		if !ok {
			tp = "in"
		}
		d.Edges = append(d.Edges, designer.Edge{From: f, FromPort: fp, To: t, ToPort: tp})
	}
	return d
}

// ordersAndCustomers are orders by customer id and updates of the customers
// table, interleaved: orders before their customer, after an update,
// after a deletion, and out of order.
var ordersAndCustomers = []Input{
	rec("orders", "c1", `{"id":"o1","amount":10}`, 1000),
	rec("customers", "c1", `{"name":"alice","tier":"gold"}`, 1500),
	rec("orders", "c1", `{"id":"o2","amount":20}`, 2000),
	rec("orders", "c2", `{"id":"o3","amount":30}`, 2500),
	rec("customers", "c2", `{"name":"bob","tier":"silver"}`, 3000),
	rec("customers", "c1", `{"name":"alice","tier":"silver"}`, 3500),
	rec("orders", "c2", `{"id":"o4","amount":40}`, 4000),
	rec("orders", "c1", `{"id":"o5","amount":50}`, 1200),
	rec("customers", "c2", "", 5000),
	rec("orders", "c2", `{"id":"o6","amount":60}`, 5500),
	rec("orders", "c3", "", 6000),
	rec("orders", "c1", "", 6500),
}

// TestDifferentialStreamTableJoins runs hand-written stream-table joins:
// inner and left, Braid's default joiner and one of the key and both
// sides, and a stream that a select-key or a map (which once lost the
// stream's serdes for the repartition: compiler's
// TestCompiledJoinsAfterMap) repartitions before the join; with null
// values on both sides.
func TestDifferentialStreamTableJoins(t *testing.T) {
	join := func(name string, params ...string) Case {
		return Case{Name: name, Input: ordersAndCustomers, Design: graph([]designer.Node{
			n("orders", "source-stream", "topic", "orders"),
			n("customers", "source-table", "topic", "customers"),
			n("j", "stream-table-join", params...),
			n("sink", "sink", "topic", "out"),
		}, "orders>j.stream", "customers>j.table", "j>sink")}
	}
	runBoth(t, []Case{
		join("inner, default joiner", "type", "inner"),
		join("left, default joiner", "type", "left"),
		join("inner", "type", "inner", "joiner", `{order: left.id, who: right.name, customer: key}`),
		join("left", "type", "left", "joiner", `{order: left.id, amount: left.amount * 2, customer: key}`),
		{Name: "rekeyed stream", Input: ordersAndCustomers, Design: graph([]designer.Node{
			n("orders", "source-stream", "topic", "orders"),
			n("k", "select-key", "key", `key + ""`),
			n("customers", "source-table", "topic", "customers"),
			n("j", "stream-table-join", "type", "left", "joiner", `{order: left, customer: right}`),
			n("sink", "sink", "topic", "out"),
		}, "orders>k", "k>j.stream", "customers>j.table", "j>sink")},
		{Name: "mapped stream", Input: ordersAndCustomers, Design: graph([]designer.Node{
			n("orders", "source-stream", "topic", "orders"),
			n("f", "filter", "predicate", "value != nil"),
			n("m", "map", "key", "key", "value", "{id: value.id, twice: value.amount * 2}"),
			n("customers", "source-table", "topic", "customers"),
			n("j", "stream-table-join", "type", "inner", "joiner", `{order: left, customer: right.name}`),
			n("sink", "sink", "topic", "out"),
		}, "orders>f", "f>m", "m>j.stream", "customers>j.table", "j>sink")},
	})
}

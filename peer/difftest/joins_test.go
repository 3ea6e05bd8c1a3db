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

// customersAndAccounts are updates of two tables by customer id: rows on
// one side only, on both, changed, deleted on either side, a deletion of
// a key never held and an update out of order.
var customersAndAccounts = []Input{
	rec("customers", "c1", `{"name":"alice","tier":"gold"}`, 1000),
	rec("accounts", "c1", `{"balance":10}`, 1500),
	rec("accounts", "c2", `{"balance":20}`, 2000),
	rec("customers", "c2", `{"name":"bob","tier":"silver"}`, 2500),
	rec("customers", "c1", `{"name":"alice","tier":"silver"}`, 3000),
	rec("accounts", "c1", "", 3500),
	rec("customers", "c3", `{"name":"carol","tier":"gold"}`, 4000),
	rec("accounts", "c9", "", 4500),
	rec("customers", "c2", "", 5000),
	rec("accounts", "c2", `{"balance":25}`, 1200),
	rec("accounts", "c3", `{"balance":30}`, 6000),
	rec("customers", "c3", "", 6500),
	rec("accounts", "c3", "", 7000),
}

// TestDifferentialTableJoins runs hand-written table-table joins: inner,
// left and outer, Braid's default joiner and one of both sides, with a
// store or without, of table sources and of a table filter.
func TestDifferentialTableJoins(t *testing.T) {
	join := func(name string, params ...string) Case {
		return Case{Name: name, Input: customersAndAccounts, Design: graph([]designer.Node{
			n("customers", "source-table", "topic", "customers", "store", "customers"),
			n("accounts", "source-table", "topic", "accounts", "store", "accounts"),
			n("j", "table-join", params...),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"),
		}, "customers>j.left", "accounts>j.right", "j>ts", "ts>sink")}
	}
	var cases []Case
	for _, typ := range []string{"inner", "left", "outer"} {
		cases = append(cases,
			join(typ+", default joiner", "type", typ),
			join(typ+", with a store", "type", typ, "joiner", "{who: left, balance: right}", "store", "joined"))
	}
	cases = append(cases, join("inner, fields", "type", "inner", "joiner", "{who: left.name, balance: right.balance * 2}"),
		Case{Name: "a table filter joined", Input: customersAndAccounts, Design: graph([]designer.Node{
			n("customers", "source-table", "topic", "customers", "store", "customers"),
			n("gold", "filter", "predicate", `value.tier == "gold"`, "store", "gold"),
			n("accounts", "source-table", "topic", "accounts", "store", "accounts"),
			n("j", "table-join", "type", "left"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"),
		}, "customers>gold", "gold>j.left", "accounts>j.right", "j>ts", "ts>sink")})
	runBoth(t, cases)
}

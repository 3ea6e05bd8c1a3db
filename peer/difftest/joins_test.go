package difftest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

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

// ordersAndPayments are orders and payments by order id: payments before
// and after their order, within the window and not, out of order, late
// past the grace, several of one key, and null values.
var ordersAndPayments = []Input{
	rec("orders", "o1", `{"amount":10}`, 1000),
	rec("payments", "o1", `{"paid":10}`, 1500),
	rec("payments", "o2", `{"paid":20}`, 2000),
	rec("orders", "o2", `{"amount":20}`, 3500),
	rec("orders", "o3", `{"amount":30}`, 4000),
	rec("payments", "o1", `{"paid":1}`, 800),
	rec("orders", "o1", `{"amount":11}`, 5000),
	rec("payments", "o3", `{"paid":30}`, 7500),
	rec("orders", "o4", `{"amount":40}`, 9000),
	rec("payments", "o4", "", 9100),
	rec("orders", "o5", "", 9200),
	rec("payments", "o2", `{"paid":2}`, 3000),
	rec("orders", "o6", `{"amount":60}`, 15000),
	rec("payments", "o4", `{"paid":40}`, 9500),
	rec("payments", "o6", `{"paid":60}`, 25000),
	rec("orders", "o7", `{"amount":70}`, 40000),
}

// TestDifferentialStreamJoins runs hand-written stream-stream joins:
// inner, left and outer, a symmetric window (and before/after, inner),
// grace or none, Braid's default joiner and one of key and both sides.
func TestDifferentialStreamJoins(t *testing.T) {
	join := func(name string, params ...string) Case {
		return Case{Name: name, Input: ordersAndPayments, Design: graph([]designer.Node{
			n("orders", "source-stream", "topic", "orders"),
			n("payments", "source-stream", "topic", "payments"),
			n("j", "stream-join", params...),
			n("sink", "sink", "topic", "out"),
		}, "orders>j.left", "payments>j.right", "j>sink")}
	}
	var cases []Case
	for _, typ := range []string{"inner", "left", "outer"} {
		cases = append(cases,
			join(typ+", window 2s", "type", typ, "window", "2s"),
			join(typ+", window 2s, grace 1s", "type", typ, "window", "2s", "grace", "1s", "joiner", "{k: key, order: left, payment: right}"))
	}
	cases = append(cases, join("inner, fields", "type", "inner", "window", "3s", "joiner", "{due: left.amount - right.paid}"),
		join("inner, before 1s, after 3s, grace 2s", "type", "inner", "before", "1s", "after", "3s", "grace", "2s"))
	runBoth(t, cases)
}

// TestDifferentialUnmatchedJoinResultsLate pins the difference named in
// docs/differences.md, "Unmatched join results without throttling": order
// o2 (at 3.5 s) has no payment within 1 s before and 3 s after it, and its
// window and grace end at 8.5 s. Braid emits it with null when stream
// time passes that (order o4, at 9 s). Kafka Streams' check for due
// records skips then: after the scan at payment o3 (7.5 s) it remembers
// the last record it scanned (order o1, at 5 s), not the earliest. So the
// late payment of o2 (at 3 s, stream time 9.2 s), which both still join
// with the buffered order, finds o2 unemitted in Kafka Streams, which
// sends the joined result alone; Braid sends both.
func TestDifferentialUnmatchedJoinResultsLate(t *testing.T) {
	cp := peerClasspath(t)
	var cases []Case
	for _, typ := range []string{"left", "outer"} {
		cases = append(cases, Case{Name: typ, Input: ordersAndPayments, Design: graph([]designer.Node{
			n("orders", "source-stream", "topic", "orders"),
			n("payments", "source-stream", "topic", "payments"),
			n("j", "stream-join", "type", typ, "before", "1s", "after", "3s", "grace", "2s"),
			n("sink", "sink", "topic", "out"),
		}, "orders>j.left", "payments>j.right", "j>sink")})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	peer, err := RunPeer(ctx, cp, t.TempDir(), cases)
	if err != nil {
		t.Fatal(err)
	}
	o2Alone := Output{Topic: "out", Key: []byte("o2"), Value: []byte(`{"left":{"amount":20},"right":null}`), Timestamp: 3500}
	for i, c := range cases {
		braid, err := RunBraid(c)
		if err != nil {
			t.Fatal(err)
		}
		var rest []Output
		for _, o := range braid {
			if !(string(o.Key) == "o2" && sameBytes(o.Value, o2Alone.Value) && o.Timestamp == o2Alone.Timestamp) {
				rest = append(rest, o)
			}
		}
		if len(rest) != len(braid)-1 {
			t.Errorf("%s: Braid did not emit o2 alone once:\n%s", c.Name, Diff(braid, peer[i]))
		}
		// Without it, the same records; Kafka Streams' unmatched ones
		// come later, after o2's joined result.
		if d := Diff(sorted(rest), sorted(peer[i])); d != "" {
			t.Errorf("%s: without o2 alone, sorted:\n%s", c.Name, d)
		}
	}
}

// sorted returns out sorted by key, timestamp and value.
func sorted(out []Output) []Output {
	s := slices.Clone(out)
	slices.SortFunc(s, func(a, b Output) int {
		return cmp.Or(bytes.Compare(a.Key, b.Key), cmp.Compare(a.Timestamp, b.Timestamp), strings.Compare(showValue(a.Value), showValue(b.Value)))
	})
	return s
}

// showValue is a value as JSON decoded and encoded again (Go's field
// order), else as it is.
func showValue(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestDifferentialUnmatchedJoinRecordsWaitForGrace pins the difference
// named in docs/differences.md, "Unmatched join records wait for grace":
// in an outer join of a window of 2 s and a grace of 2 s, order o2 (at
// 2.5 s) comes at stream time 5 s, after its window (4.5 s) and within
// its grace (6.5 s). Kafka Streams emits it with null at once, and the
// joined result when its payment (at 3 s) comes; Braid keeps it and emits
// only the joined result. The unmatched o1 and x come with null in both
// once the end record passes their grace.
func TestDifferentialUnmatchedJoinRecordsWaitForGrace(t *testing.T) {
	cp := peerClasspath(t)
	c := Case{Name: "late order within grace", Design: graph([]designer.Node{
		n("orders", "source-stream", "topic", "orders"),
		n("payments", "source-stream", "topic", "payments"),
		n("j", "stream-join", "type", "outer", "window", "2s", "grace", "2s"),
		n("sink", "sink", "topic", "out"),
	}, "orders>j.left", "payments>j.right", "j>sink"),
		Input: []Input{
			rec("orders", "o1", `{"amount":10}`, 1000),
			rec("payments", "x", `{"paid":1}`, 5000),
			rec("orders", "o2", `{"amount":20}`, 2500), // after its window, within grace
			rec("payments", "o2", `{"paid":20}`, 3000),
			rec("orders", "end", `{"amount":0}`, 20000),
		}}
	peer, braid := bothSides(t, cp, c)
	o2Alone := Output{Topic: "out", Key: []byte("o2"), Value: []byte(`{"left":{"amount":20},"right":null}`), Timestamp: 2500}
	rest := []Output{
		{Topic: "out", Key: []byte("o2"), Value: []byte(`{"left":{"amount":20},"right":{"paid":20}}`), Timestamp: 3000},
		{Topic: "out", Key: []byte("o1"), Value: []byte(`{"left":{"amount":10},"right":null}`), Timestamp: 1000},
		{Topic: "out", Key: []byte("x"), Value: []byte(`{"left":null,"right":{"paid":1}}`), Timestamp: 5000},
	}
	if d := Diff(peer[0], append([]Output{o2Alone}, rest...)); d != "" {
		t.Errorf("Kafka Streams:\n%s", d)
	}
	if d := Diff(braid, rest); d != "" {
		t.Errorf("Braid:\n%s", d)
	}
}

// TestDifferentialStreamTimePerTaskJoin pins "Stream time per task" in
// docs/differences.md for a left or outer stream-stream join: a payment
// that a filter drops (at 5 s) advances Braid's stream time past the
// window of order o1 (at 1 s, window 2 s, no grace), so the next order,
// o2 (at 1.5 s), finds o1 due and itself too late for a partner: Braid
// emits both with null, then o2's joined result when its payment comes.
// Kafka Streams' join has seen nothing after 1.5 s then: o2 waits, meets
// its payment, and o1 comes with null only at the end record.
func TestDifferentialStreamTimePerTaskJoin(t *testing.T) {
	cp := peerClasspath(t)
	c := Case{Name: "filtered record closes join windows", Design: graph([]designer.Node{
		n("orders", "source-stream", "topic", "orders"),
		n("payments", "source-stream", "topic", "payments"),
		n("paid", "filter", "predicate", "value.paid >= 1"),
		n("j", "stream-join", "type", "outer", "window", "2s", "grace", "0s"),
		n("sink", "sink", "topic", "out"),
	}, "orders>j.left", "payments>paid", "paid>j.right", "j>sink"),
		Input: []Input{
			rec("orders", "o1", `{"amount":10}`, 1000),
			rec("payments", "p0", `{"paid":0}`, 5000), // filtered out
			rec("orders", "o2", `{"amount":20}`, 1500),
			rec("payments", "o2", `{"paid":20}`, 2000),
			rec("orders", "end", `{"amount":0}`, 20000),
		}}
	peer, braid := bothSides(t, cp, c)
	o1Alone := Output{Topic: "out", Key: []byte("o1"), Value: []byte(`{"left":{"amount":10},"right":null}`), Timestamp: 1000}
	o2Alone := Output{Topic: "out", Key: []byte("o2"), Value: []byte(`{"left":{"amount":20},"right":null}`), Timestamp: 1500}
	o2Joined := Output{Topic: "out", Key: []byte("o2"), Value: []byte(`{"left":{"amount":20},"right":{"paid":20}}`), Timestamp: 2000}
	if d := Diff(peer[0], []Output{o2Joined, o1Alone}); d != "" {
		t.Errorf("Kafka Streams:\n%s", d)
	}
	if d := Diff(braid, []Output{o1Alone, o2Alone, o2Joined}); d != "" {
		t.Errorf("Braid:\n%s", d)
	}
}

package compiler

import (
	"encoding/json"
	"testing"

	"github.com/braidstream/braid/designer"
)

// TestPreviewJoins previews the three joins on sample records: a
// stream-stream join within its window (a payment outside it, an order
// out of order that still meets its payment, one too late for its buffer),
// a left stream-table join with and without a customer, and an outer
// table-table join with and without a customer for an account.
func TestPreviewJoins(t *testing.T) {
	d := loadDesign(t, "../designer/testdata/orders-joined.json")
	sample := func(topic, key string, value any, ts int64) Sample {
		return Sample{Topic: topic, Key: key, Value: value, Timestamp: ts}
	}
	p, err := RunPreview(d, []Sample{
		sample("customers", "c1", map[string]any{"name": "Ann"}, 1),
		sample("accounts", "c1", map[string]any{"tier": "gold"}, 2),
		sample("accounts", "c2", map[string]any{"tier": "silver"}, 3),
		sample("orders", "c1", map[string]any{"amount": 10}, 1000),
		sample("payments", "c1", map[string]any{"at": 1500}, 1500),
		sample("orders", "c9", map[string]any{"amount": 5}, 2000),
		sample("payments", "c9", map[string]any{"at": 2100}, 2100),
		sample("payments", "c1", map[string]any{"at": 700_000}, 700_000), // 10m after the order: no match
		sample("orders", "c1", map[string]any{"amount": 1}, 3000),        // out of order: the payment at 1500 is still buffered
		sample("orders", "c5", map[string]any{"amount": 2}, 1_500_000),   // no payment
		sample("orders", "c7", map[string]any{"amount": 3}, 3000),        // older than the orders' buffer keeps (10m+10m+1m)
	}, PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, got, want string }{
		{"the stream-stream join", jsonText(p.Nodes["paid"]["out"]),
			`[{"key":"c1","value":{"amount":10,"id":"c1","paidAt":1500},"timestamp":1500},{"key":"c9","value":{"amount":5,"id":"c9","paidAt":2100},"timestamp":2100},{"key":"c1","value":{"amount":1,"id":"c1","paidAt":1500},"timestamp":3000}]`},
		{"sink paid-orders", jsonText(p.Sinks["paid-orders"]),
			`[{"key":"c1","value":{"amount":10,"customer":"Ann","id":"c1"},"timestamp":1500},{"key":"c9","value":{"amount":5,"customer":null,"id":"c9"},"timestamp":2100},{"key":"c1","value":{"amount":1,"customer":"Ann","id":"c1"},"timestamp":3000}]`},
		{"sink customer-accounts", jsonText(p.Sinks["customer-accounts"]),
			`[{"key":"c1","value":{"left":{"name":"Ann"},"right":{"tier":"gold"}},"timestamp":2},{"key":"c2","value":{"left":null,"right":{"tier":"silver"}},"timestamp":3}]`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.what, tc.got, tc.want)
		}
	}
	if len(p.Late) != 1 || p.Late[0].Sample != 10 || p.Late[0].Node != "paid" || p.Late[0].StreamTime != 1_500_000 {
		t.Errorf("late %+v, want sample 10 dropped by the join paid at stream time 1500000", p.Late)
	}
	if len(p.Errors) != 0 {
		t.Errorf("errors %+v", p.Errors)
	}
}

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// TestPreviewJoinsDerivedTables previews stream-table joins of tables
// derived with a store: orders meet the customers a filter keeps active
// (an inner join: an order of a closed or unknown customer is dropped), and
// the names a map-values makes of every customer (a left join: an unknown
// customer's order has no name). The customers table is not cached, so
// that the filter and the map-values see each row as it comes; their
// stores are read by the joins as soon as they are written.
func TestPreviewJoinsDerivedTables(t *testing.T) {
	d := design([]designer.Node{
		node("customers", "source-table", map[string]any{"topic": "customers", "caching": "off"}),
		node("orders", "source-stream", map[string]any{"topic": "orders"}),
		node("active", "filter", map[string]any{"predicate": `value.status == "active"`, "store": "active-customers"}),
		node("names", "map-values", map[string]any{"value": "value.name", "store": "customer-names"}),
		node("active-orders", "stream-table-join", map[string]any{"joiner": "{order: left.id, customer: right.name}"}),
		node("named-orders", "stream-table-join", map[string]any{"type": "left", "joiner": "{order: left.id, name: right}"}),
		node("active-out", "sink", map[string]any{"topic": "active-orders"}),
		node("named-out", "sink", map[string]any{"topic": "named-orders"}),
	},
		designer.Edge{From: "customers", FromPort: "out", To: "active", ToPort: "in"},
		designer.Edge{From: "customers", FromPort: "out", To: "names", ToPort: "in"},
		designer.Edge{From: "orders", FromPort: "out", To: "active-orders", ToPort: "stream"},
		designer.Edge{From: "active", FromPort: "out", To: "active-orders", ToPort: "table"},
		designer.Edge{From: "orders", FromPort: "out", To: "named-orders", ToPort: "stream"},
		designer.Edge{From: "names", FromPort: "out", To: "named-orders", ToPort: "table"},
		designer.Edge{From: "active-orders", FromPort: "out", To: "active-out", ToPort: "in"},
		designer.Edge{From: "named-orders", FromPort: "out", To: "named-out", ToPort: "in"},
	)
	sample := func(topic, key string, value any, ts int64) Sample {
		return Sample{Topic: topic, Key: key, Value: value, Timestamp: ts}
	}
	customer := func(name, status string) map[string]any { return map[string]any{"name": name, "status": status} }
	order := func(id string) map[string]any { return map[string]any{"id": id} }
	p, err := RunPreview(d, []Sample{
		sample("customers", "c1", customer("Ann", "active"), 1),
		sample("customers", "c2", customer("Bob", "closed"), 2),
		sample("orders", "c1", order("o1"), 10), // Ann is active
		sample("orders", "c2", order("o2"), 11), // Bob is not: dropped by the inner join
		sample("customers", "c1", customer("Ann", "closed"), 20),
		sample("orders", "c1", order("o3"), 21), // Ann is no more
		sample("customers", "c2", customer("Bob", "active"), 30),
		sample("orders", "c2", order("o4"), 31), // Bob is now
		sample("orders", "c3", order("o5"), 32), // no such customer
	}, PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, got, want string }{
		{"sink active-orders", jsonText(p.Sinks["active-orders"]),
			`[{"key":"c1","value":{"customer":"Ann","order":"o1"},"timestamp":10},{"key":"c2","value":{"customer":"Bob","order":"o4"},"timestamp":31}]`},
		{"sink named-orders", jsonText(p.Sinks["named-orders"]),
			`[{"key":"c1","value":{"name":"Ann","order":"o1"},"timestamp":10},{"key":"c2","value":{"name":"Bob","order":"o2"},"timestamp":11},` +
				`{"key":"c1","value":{"name":"Ann","order":"o3"},"timestamp":21},{"key":"c2","value":{"name":"Bob","order":"o4"},"timestamp":31},` +
				`{"key":"c3","value":{"name":null,"order":"o5"},"timestamp":32}]`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.what, tc.got, tc.want)
		}
	}
	if len(p.Errors) != 0 {
		t.Errorf("errors %+v", p.Errors)
	}
}

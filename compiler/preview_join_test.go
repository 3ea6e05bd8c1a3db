package compiler

import (
	"encoding/json"
	"testing"
)

// TestPreviewJoins previews the three joins on sample records: a
// stream-stream join within its window (a payment outside it, an order
// too late for it),
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
		sample("orders", "c1", map[string]any{"amount": 1}, 3000),        // its window closed at 3000+10m+1m
	}, PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, got, want string }{
		{"the stream-stream join", jsonText(p.Nodes["paid"]["out"]),
			`[{"key":"c1","value":{"amount":10,"id":"c1","paidAt":1500},"timestamp":1500},{"key":"c9","value":{"amount":5,"id":"c9","paidAt":2100},"timestamp":2100}]`},
		{"sink paid-orders", jsonText(p.Sinks["paid-orders"]),
			`[{"key":"c1","value":{"amount":10,"customer":"Ann","id":"c1"},"timestamp":1500},{"key":"c9","value":{"amount":5,"customer":null,"id":"c9"},"timestamp":2100}]`},
		{"sink customer-accounts", jsonText(p.Sinks["customer-accounts"]),
			`[{"key":"c1","value":{"left":{"name":"Ann"},"right":{"tier":"gold"}},"timestamp":2},{"key":"c2","value":{"left":null,"right":{"tier":"silver"}},"timestamp":3}]`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.what, tc.got, tc.want)
		}
	}
	if len(p.Late) != 1 || p.Late[0].Sample != 8 || p.Late[0].Node != "paid" || p.Late[0].StreamTime != 700_000 {
		t.Errorf("late %+v, want sample 8 dropped by the join paid at stream time 700000", p.Late)
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

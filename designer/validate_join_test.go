package designer

import "testing"

func TestValidateJoins(t *testing.T) {
	const joined = "orders-joined.json"
	// repartitioned puts repartition nodes of the given partition counts
	// (0: unset) before the stream-stream join's inputs.
	repartitioned := func(left, right int) []edit {
		part := func(n int) map[string]any {
			if n == 0 {
				return nil
			}
			return map[string]any{"partitions": n}
		}
		return []edit{
			addNode("rl", "repartition", part(left)), addNode("rr", "repartition", part(right)),
			disconnect("orders", "paid"), disconnect("payments", "paid"),
			connect("orders", "rl"), connect("payments", "rr"),
			connect("rl", "paid", "out", "left"), connect("rr", "paid", "out", "right"),
		}
	}
	for _, tc := range []struct {
		name  string
		edits []edit
		want  []want
	}{
		{"valid", nil, nil},

		// Ports and their types.
		{"left unconnected", []edit{disconnect("orders", "paid"), removeNode("orders")}, []want{{"paid", "", `input "left" is not connected`}}},
		{"table unconnected", []edit{disconnect("customers", "enriched")}, []want{{"enriched", "", `input "table" is not connected`}}},
		{"stream into the table port", []edit{disconnect("customers", "enriched"), connect("payments", "enriched", "out", "table")},
			[]want{{"enriched", "", `input "table" takes a table, not a stream (from "payments")`}}},
		{"table into a stream join", []edit{disconnect("payments", "paid"), removeNode("payments"), connect("accounts", "paid", "out", "right")},
			[]want{{"paid", "", `input "right" takes a stream, not a table (from "accounts")`}}},
		{"stream into a table join", []edit{disconnect("accounts", "customer-accounts"), connect("payments", "customer-accounts", "out", "right"), removeNode("accounts")},
			[]want{{"customer-accounts", "", `input "right" takes a table, not a stream (from "payments")`}}},
		{"two edges into one side", []edit{connect("payments", "paid", "out", "left")}, []want{{"paid", "", `input "left" has 2 edges`}}},
		{"no port in", []edit{connect("payments", "paid", "out", "in")}, []want{{"paid", "", `no input port "in" (edge from "payments"); it has "left", "right"`}}},

		// Types and joiners.
		{"outer stream-table join", []edit{set("enriched", "type", "outer")}, []want{{"enriched", "type", "must be one of inner, left, not \"outer\""}}},
		{"joiner defaults", []edit{unset("paid", "joiner"), unset("paid", "type")}, nil},
		{"blank joiner", []edit{set("paid", "joiner", " ")}, []want{{"paid", "joiner", "is blank"}}},

		// The window of a stream-stream join.
		{"no window", []edit{unset("paid", "window")}, []want{{"paid", "window", "required: the time difference"}}},
		{"zero window", []edit{set("paid", "window", "0s")}, []want{{"paid", "window", "must be more than 0"}}},
		{"negative window", []edit{set("paid", "window", "-1m")}, []want{{"paid", "window", "must not be negative"}}},
		{"negative grace", []edit{set("paid", "grace", "-1s")}, []want{{"paid", "grace", "must not be negative"}}},
		{"bad grace", []edit{set("paid", "grace", "soon")}, []want{{"paid", "grace", "is not a duration"}}},
		{"before and after", []edit{unset("paid", "window"), set("paid", "before", "5m"), set("paid", "after", "0s")}, nil},
		{"before alone", []edit{unset("paid", "window"), set("paid", "before", "5m")}, []want{{"paid", "window", "required"}}},
		{"before and after with a window", []edit{set("paid", "before", "5m"), set("paid", "after", "1m")}, []want{{"paid", "window", "not used when before and after are both set"}}},
		{"before and after zero", []edit{unset("paid", "window"), set("paid", "before", "0s"), set("paid", "after", 0)}, []want{{"paid", "after", "both 0"}}},
		{"window on a table join", []edit{set("customer-accounts", "window", "1m")}, []want{{"customer-accounts", "window", "unknown parameter"}}},

		// Names.
		{"store taken", []edit{set("customer-accounts", "store", "customers")}, []want{{"customer-accounts", "store", `store "customers" is also used by node "customers"`}}},

		// Co-partitioning the design shows.
		{"same partitions", repartitioned(4, 4), nil},
		{"partitions unknown on one side", repartitioned(4, 0), nil},
		{"different partitions", repartitioned(4, 6), []want{{"paid", "", `input "left" has 4 partitions (repartition "rl") but input "right" has 6 (repartition "rr")`}}},
		{"different partitions through a filter", append(repartitioned(4, 6),
			addNode("f", "filter", map[string]any{"predicate": "true"}), disconnect("rr", "paid"), connect("rr", "f"), connect("f", "paid", "out", "right")),
			[]want{{"paid", "", `input "right" has 6 (repartition "rr")`}}},
		{"a key changed after the repartition", append(repartitioned(4, 6),
			addNode("k", "select-key", map[string]any{"key": "value.id"}), disconnect("rr", "paid"), connect("rr", "k"), connect("k", "paid", "out", "right")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := readDesign(t, joined)
			for _, e := range tc.edits {
				e(t, d)
			}
			checkProblems(t, Validate(d), tc.want)
		})
	}
}

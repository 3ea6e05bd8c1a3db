package compiler

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/braidstream/braid/designer"
)

func loadDesign(t *testing.T, path string) *designer.Design {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := designer.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func orderSample(customer string, amount float64, ts int64) Sample {
	return Sample{Topic: "orders", Key: "o", Value: map[string]any{"customer": customer, "amount": amount, "ts": ts}, Timestamp: 1}
}

// TestPreviewWindowedDesign runs the windowed count design on samples
// without a broker: what each node emitted, the windows that closed, the
// late record, the sink's records and a failing sample.
func TestPreviewWindowedDesign(t *testing.T) {
	d := loadDesign(t, "../designer/testdata/orders-windowed.json")
	const t0 = 1_700_000_000_000
	samples := []Sample{
		orderSample("ann", 60, t0+1000),
		orderSample("bob", 10, t0+2000), // filtered out
		orderSample("ann", 70, t0+9000),
		orderSample("bob", 80, t0+12000),
		orderSample("ann", 90, t0+15000), // closes [0,10s)
		orderSample("ann", 55, t0+3000),  // late
		{Topic: "orders", Key: "o", Value: map[string]any{"customer": "ann", "amount": "lots", "ts": t0 + 16000}},
	}
	p, err := RunPreview(d, samples, PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Nodes["source"]["out"]); n != 7 {
		t.Errorf("source emitted %d records, want all 7", n)
	}
	if n := len(p.Nodes["filter"]["out"]); n != 5 {
		t.Errorf("filter emitted %d records, want the 5 of 50 or more", n)
	}
	if len(p.Windows) != 1 || p.Windows[0].Node != "count" || p.Windows[0].Start != t0 || p.Windows[0].StreamTime != t0+15000 || !p.Windows[0].Emitted {
		t.Errorf("windows %+v, want [t0, t0+10s) closed by count at t0+15s", p.Windows)
	}
	if len(p.Late) != 1 || p.Late[0].Sample != 5 || p.Late[0].Node != "count" {
		t.Errorf("late %+v, want sample 5 at count", p.Late)
	}
	sink := p.Sinks["big-orders-per-10s"]
	if len(sink) != 1 {
		t.Fatalf("sink got %v, want one final result", sink)
	}
	got, _ := json.Marshal(sink[0])
	if want := `{"key":{"end":1700000010000,"key":"ann","start":1700000000000},"value":2,"timestamp":1700000009000}`; string(got) != want {
		t.Errorf("sink record %s, want %s", got, want)
	}
	if len(p.Errors) != 1 || p.Errors[0].Sample != 6 || p.Errors[0].Node != "filter" {
		t.Errorf("errors %+v, want sample 6 failing in the filter", p.Errors)
	}
}

// TestPreviewRefusesADesignWithProblems: problems come back, nothing runs.
func TestPreviewRefusesADesignWithProblems(t *testing.T) {
	d := loadDesign(t, "../designer/testdata/orders-windowed.json")
	d.Nodes[1].Params["predicate"] = "value.amount >="
	_, err := RunPreview(d, nil, PreviewOptions{})
	ps, ok := err.(designer.Problems)
	if !ok || len(ps) == 0 || ps[0].Node != "filter" || ps[0].Param != "predicate" {
		t.Fatalf("err %v (%T), want a problem on filter's predicate", err, err)
	}
}

// TestPreviewRegroupedTable previews a table re-grouped and reduced: a
// customer moving country is subtracted from one sum and added to the
// other, and the results, cached in two sub-topologies, all come out.
func TestPreviewRegroupedTable(t *testing.T) {
	d := loadDesign(t, "../designer/testdata/credit-per-country.json")
	p, err := RunPreview(d, []Sample{
		{Topic: "customers", Key: "c1", Value: map[string]any{"country": "fr", "credit": 10}, Timestamp: 1},
		{Topic: "customers", Key: "c2", Value: map[string]any{"country": "fr", "credit": 5}, Timestamp: 2},
		{Topic: "customers", Key: "c1", Value: map[string]any{"country": "de", "credit": 7}, Timestamp: 3},
	}, PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p.Sinks["credit-per-country"])
	if want := `[{"key":"de","value":7,"timestamp":3},{"key":"fr","value":5,"timestamp":2}]`; string(got) != want {
		t.Errorf("sink %s, want %s", got, want)
	}
	for _, r := range p.Nodes["by-country"]["out"] {
		if r.Value == nil && r.Old == nil {
			t.Errorf("by-country emitted %+v: neither a value to add nor one to subtract", r)
		}
	}
}

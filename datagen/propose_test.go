package datagen

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPropose derives templates from sampled records: each field kind,
// keys and rate, and the notes for what no generator makes; every
// proposed template parses.
func TestPropose(t *testing.T) {
	const ts = int64(1_780_000_000_000)
	rec := func(p int32, off int64, key, value string) SampledRecord {
		return SampledRecord{Key: key, Value: value, Partition: p, Offset: off, Timestamp: ts + off*100}
	}
	tests := []struct {
		name      string
		records   []SampledRecord
		template  map[string]string
		keys      int
		keyPrefix string
		rate      float64
		notes     []string // substrings, one per note, in order
	}{
		{name: "no records", notes: []string{"holds no record"}, template: map[string]string{}},
		{
			name: "the demo's orders",
			records: []SampledRecord{
				rec(0, 0, "customer-3", fmt.Sprintf(`{"id": 10, "customer": "customer-3", "amount": 250, "ts": %d}`, ts)),
				rec(0, 1, "customer-7", fmt.Sprintf(`{"id": 12, "customer": "customer-7", "amount": 7, "ts": %d}`, ts+100)),
				rec(1, 0, "customer-19", fmt.Sprintf(`{"id": 11, "customer": "customer-19", "amount": 499, "ts": %d}`, ts)),
				rec(1, 1, "customer-0", fmt.Sprintf(`{"id": 13, "customer": "customer-0", "amount": 31, "ts": %d}`, ts+90)),
			},
			template: map[string]string{"id": "sequence(14)", "customer": "key", "amount": "random(7, 499)", "ts": "timestamp"},
			keys:     20, keyPrefix: "customer", rate: 20,
		},
		{
			name: "floats, bools and strings",
			records: []SampledRecord{
				rec(0, 0, "a", `{"temp": 21.5, "ok": true, "tier": "gold", "city": "New York, NY"}`),
				rec(0, 1, "b", `{"temp": 19, "ok": false, "tier": "silver", "city": "Paris"}`),
				rec(0, 2, "c", `{"temp": 23.25, "ok": true, "tier": "gold", "city": "42"}`),
			},
			template: map[string]string{"temp": "randfloat(19, 23.25)", "ok": "bool", "tier": "choice(gold, silver)",
				"city": `choice("42", "New York, NY", Paris)`},
			keys: 3, rate: 10,
		},
		{
			name: "integers far from a sequence or a timestamp",
			records: []SampledRecord{
				rec(0, 0, "k", `{"n": 5}`), rec(0, 1, "k", `{"n": 5}`), rec(0, 2, "k", `{"n": 900}`),
			},
			template: map[string]string{"n": "random(5, 900)"}, keys: 1, rate: 10,
		},
		{
			name: "many strings, nested values, mixed types and non-objects",
			records: []SampledRecord{
				rec(0, 0, "x", `{"s": "v00", "o": {"a": 1}, "m": 1, "l": [1]}`),
				rec(0, 1, "x", `{"s": "v01", "o": null, "m": "one"}`),
				rec(0, 2, "x", `{"s": "v02"}`), rec(0, 3, "x", `{"s": "v03"}`), rec(0, 4, "x", `{"s": "v04"}`),
				rec(0, 5, "x", `{"s": "v05"}`), rec(0, 6, "x", `{"s": "v06"}`), rec(0, 7, "x", `{"s": "v07"}`),
				rec(0, 8, "x", `{"s": "v08"}`), rec(0, 9, "x", `{"s": "v09"}`), rec(0, 10, "x", `{"s": "v10"}`),
				rec(0, 11, "x", `plain text`),
			},
			template: map[string]string{"s": "choice(v00, v01, v02, v03, v04, v05, v06, v07, v08, v09)"},
			keys:     1, rate: 10,
			notes: []string{"1 of the 12 records are not JSON objects", `field "l": its values are arrays`,
				`field "m": its values are of several types (number, string)`, `field "o": its values are of several types (null, object)`,
				`field "s": 11 distinct values; the choice lists the first 10`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Propose(tc.records)
			if !reflect.DeepEqual(p.Template, tc.template) {
				t.Errorf("template %v, want %v", p.Template, tc.template)
			}
			if p.Keys != tc.keys || p.KeyPrefix != tc.keyPrefix || p.Rate != tc.rate {
				t.Errorf("keys %d prefix %q rate %v, want %d %q %v", p.Keys, p.KeyPrefix, p.Rate, tc.keys, tc.keyPrefix, tc.rate)
			}
			if len(p.Notes) != len(tc.notes) {
				t.Fatalf("notes %q, want %d like %q", p.Notes, len(tc.notes), tc.notes)
			}
			for i, n := range tc.notes {
				if !strings.Contains(p.Notes[i], n) {
					t.Errorf("note %d is %q, want it to say %q", i, p.Notes[i], n)
				}
			}
			if len(p.Template) > 0 {
				if _, err := ParseTemplate(p.Template); err != nil {
					t.Errorf("the proposed template does not parse: %v", err)
				}
			}
		})
	}
}

// TestSample reads back the latest records of a topic written by a
// Generator and by another producer: up to the count asked of each
// partition, the newest ones, with their headers, which tell the two
// apart.
func TestSample(t *testing.T) {
	addr := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic = "readings"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if got, err := Sample(ctx, cl, topic, 5); err != nil || len(got) != 0 {
		t.Fatalf("Sample of an empty topic = %v, %v; want none", got, err)
	}
	for i := range 8 {
		r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte("outside"), Value: []byte(fmt.Sprintf(`{"n": %d}`, i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	g, err := New(cl, Spec{Topic: topic, Rate: 1000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := g.next(time.Now())
	rec.Partition = 1
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got, err := Sample(ctx, cl, topic, 5)
	if err != nil {
		t.Fatal(err)
	}
	var outside []int64
	generated := 0
	for _, r := range got {
		if r.FromGenerator() {
			generated++
			if r.Partition != 1 || r.Offset != 0 || !reflect.DeepEqual(r.Headers, []Header{{GeneratorHeader, "datagen"}}) {
				t.Errorf("the generator's record %+v", r)
			}
			continue
		}
		if r.Partition != 0 || r.Key != "outside" || r.Value != fmt.Sprintf(`{"n": %d}`, r.Offset) {
			t.Errorf("the outside record %+v", r)
		}
		outside = append(outside, r.Offset)
	}
	if generated != 1 || !reflect.DeepEqual(outside, []int64{3, 4, 5, 6, 7}) {
		t.Errorf("sampled %d generated records and outside offsets %v, want 1 and 3..7", generated, outside)
	}
}

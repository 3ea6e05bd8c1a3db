package streams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRepartitionByNewKey re-keys orders by customer through a repartition
// topic and checks the topic, the tasks of both sub-topologies and that
// every customer's records end up together.
func TestRepartitionByNewKey(t *testing.T) {
	for _, tc := range []struct {
		name           string
		opts           []streams.Option
		wantPartitions int32
	}{
		{name: "upstream partition count", wantPartitions: 4},
		{name: "WithPartitions(2)", opts: []streams.Option{streams.WithPartitions(2)}, wantPartitions: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const (
				n         = 400
				customers = 37
				appID     = "rekey"
				internal  = appID + "-by-customer-repartition"
			)
			b := startBroker(t)
			createTopic(t, b, "orders", 4)
			createTopic(t, b, "out", 4)

			var recs []*kgo.Record
			for i := range n {
				v, _ := json.Marshal(map[string]any{"order": i, "customer": fmt.Sprintf("c%02d", i%customers)})
				recs = append(recs, &kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "order-%d", i), Value: v})
			}
			produce(t, b, recs...)

			builder := streams.NewBuilder()
			builder.Stream([]string{"orders"}, streams.WithSerdes(streams.String, streams.JSON)).
				SelectKey(func(_, v any) (any, error) { return v.(map[string]any)["customer"], nil }).
				Repartition(append([]streams.Option{streams.Named("by-customer"), streams.WithSerdes(streams.String, streams.JSON)}, tc.opts...)...).
				To("out")
			topo, err := builder.Build()
			if err != nil {
				t.Fatal(err)
			}
			if got := topo.RepartitionTopics(appID); !slices.Equal(got, []string{internal}) {
				t.Errorf("RepartitionTopics = %q, want [%q]", got, internal)
			}
			if got := topo.Subtopologies(); got != 2 {
				t.Errorf("%d sub-topologies, want 2", got)
			}
			app, err := streams.New(topo, testConfig(b, appID))
			if err != nil {
				t.Fatal(err)
			}
			stop := runApp(t, app)

			out := consumeN(t, b, "out", n, 30*time.Second)
			if len(out) != n {
				t.Errorf("%d output records, want %d", len(out), n)
			}
			orders := make(map[int]bool)
			partitionOf := make(map[string]int32)
			for _, r := range out {
				var v struct {
					Order    int
					Customer string
				}
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatalf("output %s: %v", r.Value, err)
				}
				orders[v.Order] = true
				if string(r.Key) != v.Customer {
					t.Errorf("order %d: key %q, want the customer %q", v.Order, r.Key, v.Customer)
				}
				if p, ok := partitionOf[v.Customer]; ok && p != r.Partition {
					t.Errorf("customer %s is in output partitions %d and %d", v.Customer, p, r.Partition)
				}
				partitionOf[v.Customer] = r.Partition
			}
			if len(orders) != n {
				t.Errorf("%d distinct orders came out, want %d", len(orders), n)
			}
			if len(partitionOf) != customers {
				t.Errorf("%d customers came out, want %d", len(partitionOf), customers)
			}

			details, err := admin(t, b).ListTopics(context.Background(), internal)
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := details[internal]; !ok || d.Err != nil {
				t.Errorf("internal topic %s: exists %v, err %v", internal, ok, d.Err)
			} else if got := int32(len(d.Partitions)); got != tc.wantPartitions {
				t.Errorf("internal topic %s has %d partitions, want %d", internal, got, tc.wantPartitions)
			}
			if got := sum(endOffsets(t, b, internal)); got != n {
				t.Errorf("internal topic %s holds %d records, want %d", internal, got, n)
			}

			want := []string{"0_0", "0_1", "0_2", "0_3"}
			for p := range tc.wantPartitions {
				want = append(want, fmt.Sprintf("1_%d", p))
			}
			waitFor(t, 10*time.Second, fmt.Sprintf("the tasks %v", want), func() bool {
				return slices.Equal(taskIDs(app.Stats()), want)
			})
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

package streams_test

import (
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTableGroupByCountMovesRows counts users per region from a table of
// user -> region: when a user moves, the old region loses it and the new
// one gains it; a deleted user leaves its region.
func TestTableGroupByCountMovesRows(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "users", 2)
	createTopic(t, b, "region-counts", 2)
	up := func(user, region string) *kgo.Record {
		r := &kgo.Record{Topic: "users", Key: []byte(user)}
		if region != "" {
			r.Value = []byte(region)
		}
		return r
	}
	produce(t, b, up("ann", "north"), up("bob", "north"), up("cid", "south"), up("dan", "south"), up("eve", "east"))

	builder := streams.NewBuilder()
	builder.Table("users", streams.WithSerdes(streams.String, streams.String)).
		GroupBy(func(_, region any) (any, any, error) { return region, region, nil }, streams.WithSerdes(streams.String, streams.String)).
		Count(streams.Materialized(streams.StoreOptions{Name: "users-per-region", CachingDisabled: true})).
		To("region-counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(b, "regions")
	cfg.StateDir = t.TempDir()
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runApp(t, app)
	counts := func(want map[string]int64) func() bool {
		return func() bool {
			for region, n := range want {
				v, ok, err := app.Get("users-per-region", region)
				if err != nil || (n == 0 && ok && v.(int64) != 0) || (n > 0 && (!ok || v.(int64) != n)) {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 20*time.Second, "first counts", counts(map[string]int64{"north": 2, "south": 2, "east": 1}))
	produce(t, b, up("ann", "south"), up("eve", ""))
	waitFor(t, 20*time.Second, "counts after a move and a delete", counts(map[string]int64{"north": 1, "south": 3, "east": 0}))
}

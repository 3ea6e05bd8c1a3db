package streams_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTableFromTopic reads a table from a compacted topic of upserts and
// tombstones, filters it, maps its values and writes its changes. A
// tombstone deletes its key from the store; an update the filter rejects
// becomes a tombstone downstream when the row's old value passed, and
// nothing when it did not, as in Kafka Streams; deleting a key that is not
// there changes nothing. Without the cache every change goes out in order;
// with it, the last change of each key is the same.
func TestTableFromTopic(t *testing.T) {
	type upd struct{ key, value string } // value "" is a tombstone
	phases := [][]upd{
		{{"a", "apple"}, {"b", "banana"}, {"c", "xcherry"}, {"e", "elder"}, {"a", "xavocado"}, {"c", "cherry"}, {"e", ""}},
		{{"b", ""}, {"c", "xcoconut"}, {"c", ""}, {"d", ""}, {"a", "apricot"}},
	}
	// The store after each phase ("" absent).
	stores := []map[string]string{
		{"a": "xavocado", "b": "banana", "c": "cherry", "d": "", "e": ""},
		{"a": "apricot", "b": "", "c": "", "d": "", "e": ""},
	}
	// Every change of each key, without the cache, per output topic.
	wantFiltered := map[string][]string{
		"a": {"APPLE", "", "APRICOT"},
		"b": {"BANANA", ""},
		"c": {"CHERRY", ""},
		"e": {"ELDER", ""},
	}
	wantRaw := map[string][]string{
		"a": {"apple", "xavocado", "apricot"},
		"b": {"banana", ""},
		"c": {"xcherry", "cherry", "xcoconut", ""},
		"e": {"elder", ""},
	}
	// The last change of each key with the cache. Phase 1 is in the topic
	// before the App starts, so its first fetch brings all of it and one
	// flush writes it: e, added and deleted in between, never reaches the
	// store, the changelog or downstream, as in Kafka Streams.
	lastCached := map[string]map[string]string{
		"fruit-out": {"a": "APRICOT", "b": "", "c": ""},
		"fruit-raw": {"a": "apricot", "b": "", "c": ""},
	}
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("cached=%v", cached), func(t *testing.T) {
			b := startBroker(t)
			resp, err := admin(t, b).CreateTopic(t.Context(), 2, -1, map[string]*string{"cleanup.policy": ptr("compact")}, "fruit")
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				t.Fatal(err)
			}
			createTopic(t, b, "fruit-out", 2)
			createTopic(t, b, "fruit-raw", 2)

			builder := streams.NewBuilder()
			table := builder.Table("fruit", streams.WithSerdes(streams.String, streams.String),
				streams.Materialized(streams.StoreOptions{Name: "fruit-store", CachingDisabled: !cached}))
			table.Filter(func(_, v any) (bool, error) { return !strings.HasPrefix(v.(string), "x"), nil }).
				MapValues(func(v any) (any, error) { return strings.ToUpper(v.(string)), nil }).
				ToStream().
				To("fruit-out", streams.WithSerdes(streams.String, streams.String))
			table.To("fruit-raw")
			topo, err := builder.Build()
			if err != nil {
				t.Fatal(err)
			}
			appID := fmt.Sprintf("table-%v", cached)
			cfg := testConfig(b, appID)
			cfg.StateDir = t.TempDir()
			app, err := streams.New(topo, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, phase := range phases {
				var recs []*kgo.Record
				for _, u := range phase {
					r := &kgo.Record{Topic: "fruit", Key: []byte(u.key)}
					if u.value != "" {
						r.Value = []byte(u.value)
					}
					recs = append(recs, r)
				}
				produce(t, b, recs...)
				if i == 0 {
					runApp(t, app)
				}
				var got map[string]string
				if !eventually(15*time.Second, func() bool {
					got = map[string]string{}
					for k := range stores[i] {
						v, found, err := app.Get("fruit-store", k)
						if err != nil {
							t.Fatalf("Get(fruit-store, %s): %v", k, err)
						}
						got[k] = ""
						if found {
							got[k] = v.(string)
						}
					}
					return fmt.Sprint(got) == fmt.Sprint(stores[i])
				}) {
					t.Fatalf("after phase %d the store holds %v, want %v (\"\" = not found)", i+1, got, stores[i])
				}
			}
			var rows []string
			if err := app.Range("fruit-store", nil, nil, func(k, v any) bool {
				rows = append(rows, fmt.Sprintf("%v=%v", k, v))
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if want := []string{"a=apricot"}; !slices.Equal(rows, want) {
				t.Errorf("the store holds %v, want %v", rows, want)
			}

			for _, out := range []struct {
				topic string
				want  map[string][]string
			}{{"fruit-out", wantFiltered}, {"fruit-raw", wantRaw}} {
				var total int
				for _, seq := range out.want {
					total += len(seq)
				}
				changes := func(recs []*kgo.Record) map[string][]string {
					got := map[string][]string{}
					for _, r := range recs {
						v := string(r.Value)
						if r.Value == nil {
							v = ""
						}
						got[string(r.Key)] = append(got[string(r.Key)], v)
					}
					return got
				}
				if !cached {
					recs := consumeN(t, b, out.topic, total, 10*time.Second)
					if n := sum(endOffsets(t, b, out.topic)); n != int64(total) {
						t.Errorf("%s holds %d records, want %d", out.topic, n, total)
					}
					if got := changes(recs); fmt.Sprint(got) != fmt.Sprint(out.want) {
						t.Errorf("%s per key = %q, want %q (\"\" = tombstone)", out.topic, got, out.want)
					}
					continue
				}
				// With the cache, how many changes of a key go out in phase
				// 2 depends on the commits; the last change of each key
				// does not.
				last := func(m map[string][]string) map[string]string {
					out := map[string]string{}
					for k, seq := range m {
						out[k] = seq[len(seq)-1]
					}
					return out
				}
				// Phase 2 was committed, so its outputs are all in.
				want := lastCached[out.topic]
				n := int(sum(endOffsets(t, b, out.topic)))
				got := last(changes(consumeN(t, b, out.topic, n, 10*time.Second)))
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: last change per key = %q, want %q (\"\" = tombstone; a key added and deleted between two commits, like e, must not appear at all)",
						out.topic, got, want)
				}
			}
			changelog := appID + "-fruit-store-changelog"
			if p := topicConfig(t, b, changelog, "cleanup.policy"); p != "compact" {
				t.Errorf("changelog %s has cleanup.policy %q, want compact", changelog, p)
			}
		})
	}
}

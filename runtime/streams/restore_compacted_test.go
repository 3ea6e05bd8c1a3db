package streams_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRestoreFromCompactedChangelogWithAborts restores a store under
// exactly-once from a compacted changelog whose log start is past the
// store's checkpoint (nothing: a new instance), where the writer's
// transactional producer aborted transactions whose records compaction
// removed, and then, after coming back with the same transactional id,
// committed new values. The restore must bring the committed values: the
// broker's compaction dropped the abort markers with the aborted records
// but kept the aborted transactions in its index, and a read-committed
// reader told of them dropped every later batch of the producer id, as in
// the exactly-once chaos run whose counts went back after restores from
// the log start. And the restore must fetch from the log start, never
// from before it.
func TestRestoreFromCompactedChangelogWithAborts(t *testing.T) {
	b := startBroker(t)
	emb := b.Embedded(t, "compacting the changelog on demand")
	const appID = "compacted-aborts"
	changelog := appID + "-counts-changelog"
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	ctx := context.Background()
	resp, err := admin(t, b).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, changelog)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", changelog, err)
	}
	writeChangelog(t, b, changelog, []changelogStep{
		{"", map[string]int64{"old": 1}}, // superseded: the log start moves past it
		{"", map[string]int64{"old": 2, "a": 1}},
		{"abort", map[string]int64{"k": 100}},
		{"", map[string]int64{"z": 1}},
		{"abort", map[string]int64{"k": 200}},
		{"", map[string]int64{"z": 2}},
		{"", map[string]int64{"y": 1}}, // the last batch, which compaction never touches
	})
	for range 2 {
		if err := emb.ApplyRetention(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The writer comes back: the same transactional id, the same
	// producer id.
	writeChangelog(t, b, changelog, []changelogStep{
		{"commit", map[string]int64{"k": 5, "a": 2}},
		{"commit", map[string]int64{"k": 6}},
	})
	starts, err := admin(t, b).ListStartOffsets(ctx, changelog)
	if err != nil {
		t.Fatal(err)
	}
	logStart, _ := starts.Lookup(changelog, 0)
	if logStart.Offset == 0 {
		t.Fatalf("the log start of %s is 0: the restore would not start before it", changelog)
	}
	topics, err := admin(t, b).ListTopics(ctx, changelog)
	if err != nil {
		t.Fatal(err)
	}
	id := topics[changelog].ID
	// The restore lists the log start and fetches from there: a fetch
	// before it is out of range, and franz-go's reset lists the start
	// again, which a compaction may have moved meanwhile.
	var mu sync.Mutex
	var before []int64
	resume := emb.Silence(func(req kmsg.Request) bool {
		if f, ok := req.(*kmsg.FetchRequest); ok {
			for _, ft := range f.Topics {
				if ft.Topic != changelog && ft.TopicID != id {
					continue
				}
				for _, fp := range ft.Partitions {
					if fp.FetchOffset < logStart.Offset {
						mu.Lock()
						before = append(before, fp.FetchOffset)
						mu.Unlock()
					}
				}
			}
		}
		return false
	})
	defer resume()

	rl := &restoreLog{}
	app := newMarkerCountApp(t, b, appID, t.TempDir(), streams.ExactlyOnce, rl)
	stop := runApp(t, app)
	defer stop()
	waitFor(t, 30*time.Second, "the restore's end", func() bool { return rl.ended() == 1 })
	waitFor(t, 30*time.Second, "no task restoring", func() bool { return !restoring(app) })
	want := map[string]int64{"old": 2, "a": 2, "k": 6, "z": 2, "y": 1}
	if !storeHolds(app, want) {
		got := make(map[string]any)
		for k := range want {
			v, ok, err := app.Get("counts", k)
			got[k] = []any{v, ok, err}
		}
		t.Errorf("the restored store holds %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(before) > 0 {
		t.Errorf("the restore fetched %s from %v, before its log start %d", changelog, before, logStart.Offset)
	}
}

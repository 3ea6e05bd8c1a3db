package streams_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTimestampedStoreRestore counts clicks whose last record per user is
// older than the user's newest, and checks that each row keeps the newest
// timestamp (Kafka Streams' KIP-258): in queries, as its changelog
// records' timestamp, and after the store is rebuilt from the changelog,
// whether its state dir is gone or holds a store of the layout before
// timestamps, whose plain values must not be misread as timestamped ones.
func TestTimestampedStoreRestore(t *testing.T) {
	const (
		users = 6
		appID = "stamped"
	)
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "click-counts", 2)
	base := time.UnixMilli(1_700_000_000_000)
	recs := clickRecords(0, 10*users, users, base)
	// One more record per user, older than all of its others.
	recs = append(recs, clickRecords(0, users, users, base.Add(-time.Hour))...)
	produce(t, b, recs...)
	wantCounts := uniformCounts(users, 11)
	wantTS := map[string]int64{}
	for _, r := range recs {
		wantTS[string(r.Key)] = max(wantTS[string(r.Key)], r.Timestamp.UnixMilli())
	}
	stateDir := t.TempDir()
	cfg := testConfig(b, appID)
	cfg.StateDir = stateDir
	check := func(t *testing.T, app *streams.App) {
		t.Helper()
		waitFor(t, 15*time.Second, "the counts", func() bool { return countsAre(app, "counts", wantCounts) })
		for user, ts := range wantTS {
			row, found, err := app.GetWithTimestamp("counts", user)
			if err != nil || !found || row.Value != int64(11) || row.Timestamp != ts {
				t.Errorf("GetWithTimestamp(%s) = %+v, %v, %v; want 11 at %d", user, row, found, err, ts)
			}
		}
		rows := 0
		err := app.RangeWithTimestamps("counts", nil, nil, func(k any, row streams.ValueAndTimestamp) bool {
			rows++
			if row.Value != int64(11) || row.Timestamp != wantTS[k.(string)] {
				t.Errorf("RangeWithTimestamps: %v = %+v, want 11 at %d", k, row, wantTS[k.(string)])
			}
			return true
		})
		if err != nil || rows != users {
			t.Errorf("RangeWithTimestamps: %d rows, %v; want %d", rows, err, users)
		}
	}
	app := newCountApp(t, b, cfg, streams.StoreOptions{})
	stop := runApp(t, app)
	check(t, app)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// The changelog carries each row's timestamp as its record's.
	changelog := appID + "-counts-changelog"
	ends := endOffsets(t, b, changelog)
	last := map[string]*kgo.Record{}
	for _, r := range consumeN(t, b, changelog, int(sum(ends)), 10*time.Second) {
		last[string(r.Key)] = r
	}
	for user, ts := range wantTS {
		if r := last[user]; r == nil || r.Timestamp.UnixMilli() != ts {
			t.Errorf("the last changelog record of %s: %v, want timestamp %d", user, r, ts)
		}
	}

	for _, tc := range []struct {
		name string
		// spoil returns the state dir to start from.
		spoil func(t *testing.T) string
	}{
		{"empty state dir", func(t *testing.T) string { return t.TempDir() }},
		{"store of the plain layout", func(t *testing.T) string {
			// A store as Braid wrote it before timestamps, checkpointed
			// at the changelog's end: its values are plain counts.
			for p, end := range ends {
				task := fmt.Sprintf("0_%d", p)
				db, err := state.Open(state.Options{Dir: filepath.Join(stateDir, appID, task, "counts"), Identity: appID + "/" + task + "/counts"})
				if err != nil {
					t.Fatal(err)
				}
				for user := range wantTS {
					if err := db.Put([]byte(user), i64(11)); err != nil {
						t.Fatal(err)
					}
				}
				if err := db.Commit(state.Checkpoint{ChangelogOffset: end, StreamTime: -1}); err != nil {
					t.Fatal(err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			}
			return stateDir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := newLogCapture()
			cfg := cfg
			cfg.StateDir = tc.spoil(t)
			cfg.Logger = slog.New(logs)
			app := newCountApp(t, b, cfg, streams.StoreOptions{})
			stop := runApp(t, app)
			check(t, app)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if tc.name == "store of the plain layout" && len(logs.matching("WARN", "rebuild", "counts")) == 0 {
				t.Error("no warning says the store of the plain layout is rebuilt")
			}
		})
	}
}

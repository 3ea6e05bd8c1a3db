package streams_test

import (
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestRestoreOfDeletedChangelog restores a store on a new instance after
// every record of its changelog was deleted (as Kafka's retention deletes
// a windowed changelog's records by their timestamps): the restore has
// nothing to read, ends at once, and the task processes new input. It used
// to wait for records that never came, give up after the broker timeout
// and join again, forever.
func TestRestoreOfDeletedChangelog(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	produce(t, b, clickRecords(0, 20, 4, time.Now().Add(-time.Hour))...)

	cfg := testConfig(b, "deleted")
	cfg.StateDir = t.TempDir()
	stop := runApp(t, newCountApp(t, b, cfg, streams.StoreOptions{CachingDisabled: true}))
	waitFor(t, 60*time.Second, "the first instance to commit every click", func() bool {
		return committedOffsets(t, b, "deleted", "clicks")[0] == 20
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	const changelog = "deleted-counts-changelog"
	end := endOffsets(t, b, changelog)[0]
	if end == 0 {
		t.Fatalf("changelog %s is empty: nothing to delete", changelog)
	}
	deleteRecordsBefore(t, b, changelog, end)

	rec := &recorder{}
	cfg.StateDir = t.TempDir() // a new instance: no local state
	// The broker timeout is the session timeout: the old code gave the
	// restore up only after it, and the wait below ends well before.
	cfg.SessionTimeout = 60 * time.Second
	cfg.Hooks = []streams.Hook{rec}
	runApp(t, newCountApp(t, b, cfg, streams.StoreOptions{CachingDisabled: true}))
	produce(t, b, clickRecords(20, 4, 4, time.Now().Add(-time.Hour))...)
	waitFor(t, 30*time.Second, "the new instance to process the new clicks", func() bool {
		return committedOffsets(t, b, "deleted", "clicks")[0] == 24
	})
}

package streams_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStoreBlockCache runs an App with the default configuration and one
// with StoreBlockCacheBytes set, and reads back from every task's open
// store the block cache its pebble database was given: the default is
// state's measured one, and a configured size reaches the store.
func TestStoreBlockCache(t *testing.T) {
	const partitions = 2
	b := startBroker(t)
	createTopic(t, b, "clicks", partitions)
	createTopic(t, b, "click-counts", partitions)
	produce(t, b, clickRecords(0, 10, 10, time.UnixMilli(1_700_000_000_000))...)
	for _, tc := range []struct {
		configured, want int64
	}{
		{0, state.DefaultBlockCacheBytes},
		{3 << 20, 3 << 20},
	} {
		t.Run(fmt.Sprintf("configured=%d", tc.configured), func(t *testing.T) {
			cfg := testConfig(b, fmt.Sprintf("block-cache-%d", tc.configured))
			cfg.StateDir = t.TempDir()
			cfg.StoreBlockCacheBytes = tc.configured
			app := newCountApp(t, b, cfg, streams.StoreOptions{})
			stop := runApp(t, app)
			var got map[streams.TaskID]int64
			waitFor(t, 30*time.Second, "every task running with its store open", func() bool {
				got = streams.StoreBlockCaches(app, "counts")
				return len(got) == partitions
			})
			for id, n := range got {
				if n != tc.want {
					t.Errorf("task %s: store opened with a %d-byte block cache, want %d", id, n, tc.want)
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFetchWhileStoresOpen runs a count on an empty state dir with every
// store open held back: its tasks are new here and their changelogs
// empty, so nothing the stores hold can hold up the first fetch, and the
// group client fetches the input while the stores still wait to open
// (before, the assignment waited for them, and the fetch for it). Once
// they open, every record is counted. A second instance, on an empty
// state dir of its own, then finds the changelogs no longer empty: it
// restores the counts before it counts on from them.
func TestFetchWhileStoresOpen(t *testing.T) {
	const partitions, users = 2, 10
	b := startBroker(t)
	createTopic(t, b, "clicks", partitions)
	createTopic(t, b, "click-counts", partitions)
	produce(t, b, clickRecords(0, 2*users, users, time.UnixMilli(1_700_000_000_000))...)

	cfg := testConfig(b, "fetch-while-stores-open")
	cfg.StateDir = t.TempDir()
	fetched := &fetchedRecords{}
	cfg.ClientOptions = []kgo.Opt{kgo.WithHooks(fetched)}
	app := newCountApp(t, b, cfg, streams.StoreOptions{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	streams.HoldStoreOpens(app, release)
	stop := runApp(t, app)
	t.Cleanup(let) // before stop, which would wait for the held stores
	waitFor(t, 30*time.Second, "the input fetched while the stores wait to open", func() bool {
		return fetched.n.Load() == 2*users
	})
	let()
	want := make(map[string]int64)
	for i := range users {
		want[fmt.Sprintf("user-%02d", i)] = 2
	}
	waitFor(t, 30*time.Second, "every click counted", func() bool { return countsAre(app, "counts", want) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	cfg.StateDir = t.TempDir()
	cfg.ClientOptions = nil
	second := newCountApp(t, b, cfg, streams.StoreOptions{})
	stop = runApp(t, second)
	produce(t, b, clickRecords(2*users, users, users, time.UnixMilli(1_700_000_100_000))...)
	for k := range want {
		want[k] = 3
	}
	waitFor(t, 30*time.Second, "the restored counts counted on", func() bool { return countsAre(second, "counts", want) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// fetchedRecords counts the records a client's fetches buffered.
type fetchedRecords struct{ n atomic.Int64 }

func (f *fetchedRecords) OnFetchRecordBuffered(*kgo.Record) { f.n.Add(1) }

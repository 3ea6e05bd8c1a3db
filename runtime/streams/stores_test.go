package streams_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/braidstream/braid/runtime/streams"
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

package streams_test

import (
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestAggregationNulls checks which records with a null value each
// aggregation skips, by Kafka Streams' rule (KStreamAggregate,
// KStreamReduce and KStreamSlidingWindowAggregate skip them;
// KStreamWindowAggregate and KStreamSessionWindowAggregate aggregate
// them), and that every aggregation skips a null key.
func TestAggregationNulls(t *testing.T) {
	in := []string{"k:a@1", "k:null@2", "null:b@3", "k:c@4"}
	cases := []struct {
		name    string
		keys    streams.Serde
		count   func(*streams.GroupedStream, streams.Option) *streams.Table
		skipped []int64 // input offsets
		want    []string
	}{{
		name:  "stream",
		keys:  streams.String,
		count: func(g *streams.GroupedStream, o streams.Option) *streams.Table { return g.Count(o) },
		// the null value is skipped as well as the null key
		skipped: []int64{1, 2},
		want:    []string{"k:1@1", "k:2@4"},
	}, {
		name: "tumbling",
		keys: windowsTimeKeys(10 * windowsMs),
		count: func(g *streams.GroupedStream, o streams.Option) *streams.Table {
			return g.WindowedBy(streams.Tumbling(10*windowsMs, time.Second)).Count(o)
		},
		// the null value counts
		skipped: []int64{2},
		want:    []string{"[k@0/10]:1@1", "[k@0/10]:2@2", "[k@0/10]:3@4"},
	}, {
		name: "session",
		keys: sessionKeys,
		count: func(g *streams.GroupedStream, o streams.Option) *streams.Table {
			return g.WindowedBy(streams.Sessions(10*windowsMs, time.Second)).Count(o)
		},
		skipped: []int64{2},
		want: []string{"[k@1/1]:1@1", "[k@1/1]:null@1", "[k@1/2]:2@2",
			"[k@1/2]:null@2", "[k@1/4]:3@4"},
	}, {
		name: "sliding",
		keys: windowsTimeKeys(10 * windowsMs),
		count: func(g *streams.GroupedStream, o streams.Option) *streams.Table {
			return g.WindowedBy(streams.Sliding(10*windowsMs, time.Second)).Count(o)
		},
		// sliding windows skip the null value; 4 opens the right window
		// of 1
		skipped: []int64{1, 2},
		want:    []string{"[k@0/10]:1@1", "[k@2/12]:1@4", "[k@0/10]:2@4"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, g := windowsGrouped()
			skips := &windowsSkips{}
			w := newWindowsDriver(t, b, tc.count(g, windowsStore("counts", false)), tc.keys, streams.Int64, skips)
			w.in(in...)
			w.expectOut(tc.want...)
			if got := w.skipped(); got != int64(len(tc.skipped)) {
				t.Errorf("Stats: %d records skipped, want %d", got, len(tc.skipped))
			}
			if len(skips.lines) != len(tc.skipped) {
				t.Fatalf("hooks heard of %v, want offsets %v", skips.lines, tc.skipped)
			}
			for i, o := range tc.skipped {
				want := windowsIn + "/0@" + windowsItoa(o) + ": "
				if line := skips.lines[i]; len(line) < len(want) || line[:len(want)] != want {
					t.Errorf("skip %d: %s, want offset %d", i, line, o)
				}
			}
		})
	}
}

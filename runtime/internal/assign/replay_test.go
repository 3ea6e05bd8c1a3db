package assign_test

import (
	"bytes"
	"testing"

	"github.com/braidstream/braid/runtime/internal/assign"
)

// TestReplayedJoin pins when a restarted static member's first join sends
// the metadata of its last join again: only when it is still true but for
// offsets that lag the state held now, and only once.
func TestReplayedJoin(t *testing.T) {
	task := assign.Task{Subtopology: 0, Partition: 1}
	last := func(opts assign.Options) []byte {
		m := newMember("m1", opts, []assign.Task{task}, map[assign.Task]int64{task: 100})
		meta := m.balancer.JoinGroupMetadata(topics, nil, 7)
		if got, replayed := m.balancer.LastJoin(); !bytes.Equal(got, meta) || replayed {
			t.Fatalf("LastJoin = %x, %v; want the join's metadata, not replayed", got, replayed)
		}
		return meta
	}
	for _, tc := range []struct {
		name    string
		opts    assign.Options
		topics  []string
		offsets map[assign.Task]int64
		tags    map[string]string
		want    bool
	}{
		{name: "state moved on", topics: topics, offsets: map[assign.Task]int64{task: 250}, want: true},
		{name: "same state", topics: topics, offsets: map[assign.Task]int64{task: 100}, want: true},
		{name: "state lost", topics: topics, offsets: map[assign.Task]int64{}},
		{name: "state behind", topics: topics, offsets: map[assign.Task]int64{task: 99}},
		{name: "topics changed", topics: topics[:2], offsets: map[assign.Task]int64{task: 250}},
		{name: "tags changed", topics: topics, offsets: map[assign.Task]int64{task: 250}, tags: map[string]string{"zone": "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := last(tc.opts)
			opts := tc.opts
			opts.Tags = tc.tags
			m := newMember("m1", opts, nil, tc.offsets)
			m.balancer.SetReplay(prev)
			got := m.balancer.JoinGroupMetadata(tc.topics, nil, -1)
			if replayed := bytes.Equal(got, prev); replayed != tc.want {
				t.Fatalf("first join replayed = %v, want %v", replayed, tc.want)
			}
			if _, replayed := m.balancer.LastJoin(); replayed != tc.want {
				t.Errorf("LastJoin says replayed = %v, want %v", replayed, tc.want)
			}
			again := m.balancer.JoinGroupMetadata(tc.topics, nil, 8)
			if bytes.Equal(again, prev) {
				t.Error("second join replayed too, want fresh metadata")
			}
			if _, replayed := m.balancer.LastJoin(); replayed {
				t.Error("LastJoin says the second join was replayed")
			}
		})
	}
	t.Run("eager member replaying a cooperative join", func(t *testing.T) {
		m := newMember("m1", assign.Options{Cooperative: true}, []assign.Task{task}, map[assign.Task]int64{task: 100})
		prev := m.balancer.JoinGroupMetadata(topics, map[string][]int32{"a": {1}}, 7)
		eager := newMember("m1", assign.Options{}, nil, map[assign.Task]int64{task: 100})
		eager.balancer.SetReplay(prev)
		if got := eager.balancer.JoinGroupMetadata(topics, nil, -1); bytes.Equal(got, prev) {
			t.Error("an eager member replayed a join naming owned partitions")
		}
	})
}

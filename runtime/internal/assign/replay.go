package assign

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Replaying a static member's last join.
//
// A static member (KIP-345) that restarts within its session timeout
// rejoins with its group.instance.id and no member id. Kafka's broker then
// hands it its old assignment without a rebalance when the group is
// stable and the join selects the same protocol; franz-go's kfake asks
// more: the join's protocol metadata must be byte for byte the previous
// join's. A member's metadata says what state it holds (changelog offset
// sums), which moves with every commit, so a fresh join would always
// differ there. The App therefore keeps the metadata of its last join in
// its state dir, and the first join after a restart sends those bytes
// again (SetReplay), when they are still true in every respect but the
// offsets (see replayable).
//
// The offsets of a replayed join are old: at most as far as the state on
// disk, never further, since state only moves forward and replayable
// refuses a join claiming more than the member holds now (its state dir
// was wiped, say). Understated offsets are the safe error. They can
// mislead only a leader that plans with them, which happens only if the
// group rebalances at that very moment; then the member may get a warm-up
// instead of an active it could have taken. A cooperative join also
// names the partitions the member owned, which after a restart it owns
// no more: a leader would withhold the tasks moving away from it, and
// with nothing to revoke it would never join again to release them. The
// App therefore rejoins at once, with fresh metadata, whenever the
// assignment that follows a replayed join comes from a new generation
// (see runtime/streams/static.go): at most one extra rebalance, and only
// when a rebalance coincided with the restart.

// SetReplay gives the balancer the metadata of this member's last join
// before a restart. The next JoinGroupMetadata sends it instead of fresh
// metadata if replayable allows, and every later one sends fresh
// metadata.
func (b *Balancer) SetReplay(meta []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.replay = slices.Clone(meta)
}

// LastJoin returns the metadata of this member's last join, and whether
// it was a replay.
func (b *Balancer) LastJoin() (meta []byte, replayed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastJoin, b.replayed
}

// takeReplay returns the replayable metadata for this join, nil when
// there is none, and forgets it: a replay serves one join only.
func (b *Balancer) takeReplay(topics []string, offsets map[Task]int64) []byte {
	b.mu.Lock()
	replay := b.replay
	b.replay = nil
	b.mu.Unlock()
	if replay == nil || !b.replayable(replay, topics, offsets) {
		return nil
	}
	return replay
}

// replayable reports whether a replayed join says what a fresh join would
// say now, but for offsets no further than those held now: the same
// topics, instance, server and rack tags, this version's user data, and
// owned partitions only under the cooperative protocol.
func (b *Balancer) replayable(replay []byte, topics []string, offsets map[Task]int64) bool {
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(replay); err != nil {
		return false
	}
	if !slices.Equal(meta.Topics, topics) || (!b.opts.Cooperative && len(meta.OwnedPartitions) > 0) {
		return false
	}
	var info memberInfo
	if err := json.Unmarshal(meta.UserData, &info); err != nil {
		return false
	}
	if info.Version != infoVersion || info.Instance != b.opts.Instance || info.Server != b.opts.Server ||
		!maps.Equal(info.Tags, b.opts.Tags) {
		return false
	}
	for t, off := range info.Offsets {
		if held, ok := offsets[t]; !ok || held < off {
			return false
		}
	}
	return true
}

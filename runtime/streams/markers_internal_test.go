package streams

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// heldBy decides which open transactions a restore waits for: those the
// coordinators list as committing, and, when a coordinator did not
// answer, those none of them listed.
func TestHeldBy(t *testing.T) {
	open := map[int64][]heldPartition{
		1: {{Topic: "c", Partition: 0, ProducerID: 1}},
		2: {{Topic: "c", Partition: 1, ProducerID: 2}, {Topic: "d", Partition: 1, ProducerID: 2}},
	}
	listed := func(states map[int64]string) kadm.ListedTransactions {
		l := make(kadm.ListedTransactions)
		for id, s := range states {
			l[fmt.Sprint("txn-", id)] = kadm.ListedTransaction{TxnID: fmt.Sprint("txn-", id), ProducerID: id, State: s}
		}
		return l
	}
	for _, tc := range []struct {
		name    string
		states  map[int64]string
		partial bool
		want    []string
	}{
		{"none committing", map[int64]string{1: "Ongoing", 2: "CompleteAbort"}, false, nil},
		{"one committing", map[int64]string{1: "PrepareCommit", 2: "Ongoing"}, false, []string{"c/0 PrepareCommit"}},
		{"both committing", map[int64]string{1: "CompleteCommit", 2: "PrepareCommit"}, false, []string{"c/0 CompleteCommit", "c/1 PrepareCommit", "d/1 PrepareCommit"}},
		{"unlisted, every coordinator answered", map[int64]string{1: "Ongoing"}, false, nil},
		{"unlisted, a coordinator loading", map[int64]string{1: "Ongoing"}, true, []string{"c/1 " + unknownState, "d/1 " + unknownState}},
		{"listed Ongoing, a coordinator loading", map[int64]string{1: "Ongoing", 2: "PrepareAbort"}, true, nil},
		{"nothing listed, a coordinator loading", nil, true, []string{"c/0 " + unknownState, "c/1 " + unknownState, "d/1 " + unknownState}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, h := range heldBy([]int64{1, 2}, open, listed(tc.states), tc.partial, committingStates) {
				got = append(got, fmt.Sprintf("%s/%d %s", h.Topic, h.Partition, h.State))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("held %q, want %q", got, tc.want)
			}
		})
	}
}

// TestShortOf checks the rule that ends a wait for commit markers: every
// partition a committing transaction was seen holding must list an LSO
// past that transaction's start, whatever the producers' listing says
// since (a stale leader may answer the LSO).
func TestShortOf(t *testing.T) {
	listed := func(offsets map[int32]int64) kadm.ListedOffsets {
		l := kadm.ListedOffsets{}
		for p, o := range offsets {
			if l["cl"] == nil {
				l["cl"] = map[int32]kadm.ListedOffset{}
			}
			l["cl"][p] = kadm.ListedOffset{Topic: "cl", Partition: p, Offset: o}
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		ends   map[int32]int64
		passed map[TopicPartition]int64
		short  int
	}{
		{"nothing seen held", map[int32]int64{0: 5}, nil, 0},
		{"the LSO at the transaction's start", map[int32]int64{0: 7}, map[TopicPartition]int64{{"cl", 0}: 7}, 1},
		{"the LSO before it", map[int32]int64{0: 3}, map[TopicPartition]int64{{"cl", 0}: 7}, 1},
		{"the LSO past it", map[int32]int64{0: 9}, map[TopicPartition]int64{{"cl", 0}: 7}, 0},
		{"one of two past", map[int32]int64{0: 9, 1: 2}, map[TopicPartition]int64{{"cl", 0}: 7, {"cl", 1}: 2}, 1},
		{"a partition not listed", map[int32]int64{0: 9}, map[TopicPartition]int64{{"cl", 1}: 0}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shortOf(listed(tc.ends), tc.passed); len(got) != tc.short {
				t.Errorf("shortOf(%v, %v) = %v, want %d partitions", tc.ends, tc.passed, got, tc.short)
			}
		})
	}
}

package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionKeepsLaterCommittedTransactions reads, read committed,
// the committed record of a transactional producer that earlier aborted
// transactions on the same partition whose records compaction removed.
// kfake's compaction drops the producer's abort markers with them (no
// data of the producer survives) but keeps the aborted transactions in
// its index, so a reader told of them dropped every later transactional
// batch of the producer id, waiting for a marker that never came: the
// exactly-once chaos run lost counts that way when it restored stores
// from the log start of compacted changelogs.
func TestCompactionKeepsLaterCommittedTransactions(t *testing.T) {
	b, ctx, plain := compactedTable(t)
	put := func(k, v string) {
		t.Helper()
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txn := client(t, b, kgo.ProducerLinger(0), kgo.TransactionalID("dangling"))
	inTxn := func(k, v string, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "v") // survives, so the log start stays before the aborts
	inTxn("k", "aborted", kgo.TryAbort)
	put("z", "v")
	inTxn("k", "aborted", kgo.TryAbort)
	put("z", "v") // a last batch, which compaction never touches
	for range 2 {
		if err := b.ApplyRetention(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The worker comes back: the same transactional id, so the same
	// producer id.
	txn = client(t, b, kgo.ProducerLinger(0), kgo.TransactionalID("dangling"))
	inTxn("k", "committed", kgo.TryCommit)
	put("last", "v")
	checkCommittedValue(ctx, t, b, "last")
	if err := b.ApplyRetention(ctx); err != nil {
		t.Fatal(err)
	}
	checkCommittedValue(ctx, t, b, "last")
}

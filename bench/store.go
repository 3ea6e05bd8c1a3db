package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// StoreCacheBytes is the pebble block cache that the hand-written count and
// the raw restore share among their per-partition DBs.
const StoreCacheBytes = 64 << 20

// stores is one pebble DB per input partition, in stateDir/<partition>, all
// sharing one block cache of StoreCacheBytes: the layout of Braid's
// per-task stores. Writes go in NoSync batches (the WAL is written, not
// fsynced): Kafka Streams does not fsync its stores either, the changelog
// is what makes state durable.
type stores struct {
	dir  string
	opts *pebble.Options
	dbs  map[int32]*pebble.DB
}

func newStores(dir string) *stores {
	return &stores{
		dir:  dir,
		opts: &pebble.Options{Cache: pebble.NewCache(StoreCacheBytes), Logger: quietLogger{}},
		dbs:  map[int32]*pebble.DB{},
	}
}

// db returns partition p's DB, opening it on first use.
func (s *stores) db(p int32) (*pebble.DB, error) {
	if db, ok := s.dbs[p]; ok {
		return db, nil
	}
	db, err := pebble.Open(filepath.Join(s.dir, strconv.Itoa(int(p))), s.opts)
	if err != nil {
		return nil, fmt.Errorf("opening the store of partition %d: %w", p, err)
	}
	s.dbs[p] = db
	return db, nil
}

// quietLogger drops pebble's informational messages (WAL replays on every
// open, written to stderr by default) and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}

func (quietLogger) Errorf(format string, args ...any) { pebble.DefaultLogger.Errorf(format, args...) }

func (quietLogger) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }

// close closes every DB and releases the cache.
func (s *stores) close() error {
	var errs []error
	for p, db := range s.dbs {
		if err := db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the store of partition %d: %w", p, err))
		}
	}
	s.dbs = nil
	if s.opts.Cache != nil {
		s.opts.Cache.Unref()
		s.opts.Cache = nil
	}
	return errors.Join(errs...)
}

// ensureCompactedTopic creates topic with cleanup.policy=compact, as Kafka
// Streams creates key-value changelogs. An existing topic is accepted if it
// has the partition count (its configs are not checked).
func ensureCompactedTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	compact := "compact"
	_, err := adm.CreateTopic(ctx, int32(partitions), 1, map[string]*string{"cleanup.policy": &compact}, topic)
	if err == nil {
		return nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	return EnsureTopic(ctx, adm, topic, partitions)
}

// partitionCount returns how many partitions topic has.
func partitionCount(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("describing topic %s: %w", topic, err)
	}
	d, ok := details[topic]
	if !ok {
		return 0, fmt.Errorf("describing topic %s: not in the metadata", topic)
	}
	if d.Err != nil {
		return 0, fmt.Errorf("describing topic %s: %w", topic, d.Err)
	}
	return len(d.Partitions), nil
}

// readTopic calls each for every record of topic, partition by partition
// in offset order, from the start to the end offsets listed when it is
// called, and returns how many records it read. It reads without a group,
// read-uncommitted.
func readTopic(ctx context.Context, brokers []string, topic string, each func(*kgo.Record) error) (int64, error) {
	return readTopicAs(ctx, brokers, topic, kgo.ReadUncommitted(), each)
}

// readTopicAs is readTopic at isolation level iso. Transaction markers are
// never passed to each nor counted. Read committed, it sees what a
// downstream read-committed consumer sees: no record of an aborted
// transaction. It then requires every transaction on topic to have ended
// (its last stable offset to equal its end offset): it reads what a
// finished run left, and an open transaction would hide the records after
// it from such a consumer for good.
func readTopicAs(ctx context.Context, brokers []string, topic string, iso kgo.IsolationLevel, each func(*kgo.Record) error) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso),
		// The markers are kept (and skipped below) so that a partition
		// whose last offset is one is still read to its end.
		kgo.KeepControlRecords())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("listing end offsets of %s: %w", topic, err)
	}
	if iso == kgo.ReadCommitted() {
		if err := awaitStable(ctx, adm, topic, ends); err != nil {
			return 0, err
		}
	}
	left := map[int32]int64{} // partition -> end offset, for those not read to the end
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var n int64
	for len(left) > 0 {
		f := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("reading %s after %d records: %w", topic, n, err)
		}
		if errs := f.Errors(); len(errs) > 0 {
			return n, fmt.Errorf("reading %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		var eachErr error
		f.EachPartition(func(p kgo.FetchTopicPartition) {
			end, ok := left[p.Partition]
			if !ok || eachErr != nil {
				return
			}
			for _, r := range p.Records {
				if r.Offset >= end {
					break
				}
				if !r.Attrs.IsControl() {
					if eachErr = each(r); eachErr != nil {
						return
					}
					n++
				}
				if r.Offset+1 >= end {
					delete(left, p.Partition)
				}
			}
		})
		if eachErr != nil {
			return n, eachErr
		}
	}
	return n, nil
}

// stableWait bounds how long awaitStable waits for the markers of ended
// transactions. Kafka's transaction coordinator writes them after it
// answers EndTxn, so a run's last commit may still be settling when the
// run is over; they land within milliseconds. A transaction left open
// stays open far longer: until the transaction timeout aborts it.
const stableWait = 5 * time.Second

// awaitStable waits until every partition of topic has its last stable
// offset at its end offset (ends), failing with the first partition whose
// transaction is still open after stableWait.
func awaitStable(ctx context.Context, adm *kadm.Client, topic string, ends kadm.ListedOffsets) error {
	deadline := time.Now().Add(stableWait)
	for {
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = stable.Error()
		}
		if err != nil {
			return fmt.Errorf("listing last stable offsets of %s: %w", topic, err)
		}
		var open error
		ends.Each(func(end kadm.ListedOffset) {
			if s, ok := stable.Lookup(topic, end.Partition); open == nil && (!ok || s.Offset != end.Offset) {
				open = fmt.Errorf("%s[%d] has a transaction open: last stable offset %d, end offset %d", topic, end.Partition, s.Offset, end.Offset)
			}
		})
		if open == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return open
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

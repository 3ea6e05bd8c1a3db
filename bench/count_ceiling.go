package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CachedCount is the ceiling of a cached count: what Braid's
// GroupByKey().Count() with its record cache could at best do with franz-go
// alone. One client in consumer group group reads topic in from the start
// (the skeleton HandwrittenCount uses) and keeps every key's count in a Go
// map, one per input partition; no store, so no pebble reads or writes. At
// every commit, every commitInterval and once at the end, it writes each key
// whose count changed since the last commit once, its latest count (an
// 8-byte big-endian int64) with the timestamp of the key's latest record, to
// out and to changelog in the key's input partition, then flushes the
// producer and commits the offsets processed: at-least-once, as the Braid
// side, with updates folded to one per key per commit as Braid's cache
// folds them (with 10,000 keys no cache evicts before a commit).
//
// It creates changelog if missing, compacted, with in's partition count,
// inside the span measured; out must exist with at least in's partition
// count. It stops after records records and returns how long that took, as
// Result says. Cancel ctx to give up.
//
// A partition revoked mid-run has its changed counts written and its
// processed offsets committed (the commit does both); its counts stay in
// memory until the call returns (one member never rebalances).
func CachedCount(ctx context.Context, brokers []string, in, out, changelog, group string, records int, commitInterval time.Duration) (Result, error) {
	start := time.Now()
	c, err := openCeiling(ctx, "cached count ceiling", brokers, in, changelog, group, records, commitInterval)
	if err != nil {
		return Result{}, err
	}
	defer c.close()

	counts := map[int32]*partitionCounts{}
	c.beforeCommit = func() {
		for p, pc := range counts {
			pc.write(ctx, c, p, out, changelog)
		}
	}
	return c.run(ctx, start, records, commitInterval, func(p int32, rs []*kgo.Record) error {
		pc := counts[p]
		if pc == nil {
			pc = &partitionCounts{counts: map[string]*keyCount{}}
			counts[p] = pc
		}
		for _, r := range rs {
			pc.add(r)
		}
		return nil
	})
}

// openCeiling checks the arguments of a ceiling named name that keeps a
// changelog, and makes its consumer, whose records go to the partitions
// they name, and changelog, if missing, compacted, with in's partition
// count. The caller closes the consumer.
func openCeiling(ctx context.Context, name string, brokers []string, in, changelog, group string, records int, commitInterval time.Duration) (*alosConsumer, error) {
	if records <= 0 {
		return nil, fmt.Errorf("%s: records %d must be positive", name, records)
	}
	if commitInterval <= 0 {
		return nil, fmt.Errorf("%s: commit interval %v must be positive", name, commitInterval)
	}
	c, err := newALOSConsumer(name, brokers, in, group, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(c.cl)
	parts, err := partitionCount(ctx, adm, in)
	if err == nil {
		err = ensureCompactedTopic(ctx, adm, changelog, parts)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// partitionCounts are the counts of one input partition's keys, and those
// changed since the last commit.
type partitionCounts struct {
	counts map[string]*keyCount
	dirty  []*keyCount
}

type keyCount struct {
	key   []byte
	n     int64
	ts    time.Time // of the key's latest record
	dirty bool
}

func (pc *partitionCounts) add(r *kgo.Record) {
	kc := pc.counts[string(r.Key)] // a lookup by string(b) does not allocate
	if kc == nil {
		kc = &keyCount{key: append([]byte(nil), r.Key...)}
		pc.counts[string(kc.key)] = kc
	}
	kc.n++
	kc.ts = r.Timestamp
	if !kc.dirty {
		kc.dirty = true
		pc.dirty = append(pc.dirty, kc)
	}
}

// write produces every changed key's count to out and changelog in
// partition p, and forgets that they changed.
func (pc *partitionCounts) write(ctx context.Context, c *alosConsumer, p int32, out, changelog string) {
	// One allocation for the values and one for the records; the producer
	// keeps each until it is acknowledged.
	vals := make([]byte, 8*len(pc.dirty))
	recs := make([]kgo.Record, 2*len(pc.dirty))
	for i, kc := range pc.dirty {
		val := vals[8*i : 8*i+8 : 8*i+8]
		binary.BigEndian.PutUint64(val, uint64(kc.n))
		o, l := &recs[2*i], &recs[2*i+1]
		*o = kgo.Record{Topic: out, Partition: p, Key: kc.key, Value: val, Timestamp: kc.ts}
		*l = kgo.Record{Topic: changelog, Partition: p, Key: kc.key, Value: val, Timestamp: kc.ts}
		c.cl.Produce(ctx, o, c.promise)
		c.cl.Produce(ctx, l, c.promise)
		kc.dirty = false
	}
	pc.dirty = pc.dirty[:0]
}

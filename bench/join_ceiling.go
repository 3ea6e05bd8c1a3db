package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Changelog topics HandwrittenJoin writes, one per side, as Braid's join
// has one per join buffer.
const (
	JoinCeilingLeftChangelog  = "bench-join-ceiling-left-changelog"
	JoinCeilingRightChangelog = "bench-join-ceiling-right-changelog"
)

// joinedRecord is a record HandwrittenJoin holds in a side's buffer.
type joinedRecord struct {
	ts    int64
	value []byte
}

// joinBuffer is one side's records of one partition, by key, each key's
// in the order they came.
type joinBuffer struct {
	byKey map[string]*[]joinedRecord
	// maxTS is the latest timestamp the buffer holds; records older than
	// maxTS minus the retention are dropped as their key is next visited.
	maxTS int64
	seq   uint32 // the next changelog key's sequence number
}

// HandwrittenJoin is the ceiling of the join benchmark: the least durable
// work BraidJoin's join does, written by hand with franz-go. One client in
// consumer group group reads topics left and right from the start; each
// record goes into its side's in-memory buffer of its partition and is
// logged to its side's changelog (leftChangelog or rightChangelog, created
// compacted with left's partition count if missing) keyed as Braid logs
// a join buffer's record, key + timestamp + sequence number, with its
// value; then every record of its key in the other side's buffer within
// JoinWindow yields a result on out, with the key, the left record's value
// and the larger timestamp: BraidJoin's output for the same input. A
// buffer drops a key's records older than its latest timestamp minus the
// join's retention (both windows and JoinGrace), as Braid's buffer does;
// a record already older than that is neither buffered nor logged, but
// still joins, as in Braid.
// Every record is produced to its input's partition.
//
// It is at-least-once as RawPipe, committing every commitInterval and at
// the end, with what it has produced flushed first. What it does not do
// that Braid's join does is keep the buffers in a store: the changelog is
// what makes them durable. It stops after records records of both topics
// together and returns how long that took, as Result says.
func HandwrittenJoin(ctx context.Context, brokers []string, left, right, out, leftChangelog, rightChangelog, group string, records int, commitInterval time.Duration) (Result, error) {
	start := time.Now()
	if records <= 0 {
		return Result{}, fmt.Errorf("handwritten join: records %d must be positive", records)
	}
	if commitInterval <= 0 {
		return Result{}, fmt.Errorf("handwritten join: commit interval %v must be positive", commitInterval)
	}
	c, err := newALOSConsumerOf("handwritten join", brokers, []string{left, right}, group, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	adm := kadm.NewClient(c.cl)
	parts, err := partitionCount(ctx, adm, left)
	if err != nil {
		return Result{}, fmt.Errorf("handwritten join: %w", err)
	}
	for _, t := range []string{leftChangelog, rightChangelog} {
		if err := ensureCompactedTopic(ctx, adm, t, parts); err != nil {
			return Result{}, fmt.Errorf("handwritten join: %w", err)
		}
	}
	j := &handJoin{cl: c.cl, promise: c.promise, out: out, changelogs: [2]string{leftChangelog, rightChangelog},
		buffers: [2]map[int32]*joinBuffer{{}, {}}}
	return c.runTopics(ctx, start, records, commitInterval, func(topic string, p int32, rs []*kgo.Record) error {
		side := 0
		if topic == right {
			side = 1
		}
		return j.process(ctx, side, p, rs)
	})
}

// handJoin is HandwrittenJoin's state: each side's buffers by partition.
type handJoin struct {
	cl         *kgo.Client
	promise    func(*kgo.Record, error)
	out        string
	changelogs [2]string // left's, right's
	buffers    [2]map[int32]*joinBuffer
	// recs is the slab the produced records are cut from: the producer
	// keeps each until it is acknowledged, so a full slab is left to it
	// and a new one started.
	recs []kgo.Record
}

// joinRetention is how far behind its latest timestamp a buffer keeps
// records: what BraidJoin's JoinWindows retain.
var joinRetention = (2*JoinWindow + JoinGrace).Milliseconds()

func (j *handJoin) buffer(side int, p int32) *joinBuffer {
	b := j.buffers[side][p]
	if b == nil {
		b = &joinBuffer{byKey: make(map[string]*[]joinedRecord), maxTS: -1 << 63}
		j.buffers[side][p] = b
	}
	return b
}

// record returns a fresh record from the slab.
func (j *handJoin) record() *kgo.Record {
	if len(j.recs) == cap(j.recs) {
		j.recs = make([]kgo.Record, 0, 4096)
	}
	j.recs = j.recs[:len(j.recs)+1]
	return &j.recs[len(j.recs)-1]
}

// process buffers, logs and joins one partition's records of one side.
func (j *handJoin) process(ctx context.Context, side int, p int32, rs []*kgo.Record) error {
	this, other := j.buffer(side, p), j.buffer(1-side, p)
	size := 0
	for _, r := range rs {
		size += len(r.Key) + 12
	}
	// One slab for the poll's changelog keys.
	keys := make([]byte, 0, size)
	window := JoinWindow.Milliseconds()
	for _, r := range rs {
		if r.Value == nil || r.Key == nil {
			continue // as Braid: nothing to join
		}
		ts := r.Timestamp.UnixMilli()
		this.maxTS = max(this.maxTS, ts)
		if ts >= this.maxTS-joinRetention {
			keys = j.bufferAndLog(ctx, this, side, p, r, ts, keys)
		} // else, as Braid, not buffered (nothing could find it) but joined
		theirs, ok := other.byKey[string(r.Key)]
		if !ok {
			continue
		}
		*theirs = evict(*theirs, other.maxTS)
		for _, m := range *theirs {
			if m.ts < ts-window || m.ts > ts+window {
				continue
			}
			v := r.Value
			if side == 1 {
				v = m.value
			}
			or := j.record()
			*or = kgo.Record{Topic: j.out, Partition: p, Key: r.Key, Value: v, Timestamp: time.UnixMilli(max(ts, m.ts))}
			j.cl.Produce(ctx, or, j.promise)
		}
	}
	return nil
}

// bufferAndLog logs record r of side to its changelog, its key cut from keys
// (which it returns grown), and buffers it in this.
func (j *handJoin) bufferAndLog(ctx context.Context, this *joinBuffer, side int, p int32, r *kgo.Record, ts int64, keys []byte) []byte {
	from := len(keys)
	keys = append(keys, r.Key...)
	keys = binary.BigEndian.AppendUint64(keys, uint64(ts))
	keys = binary.BigEndian.AppendUint32(keys, this.seq)
	this.seq++
	cr := j.record()
	*cr = kgo.Record{Topic: j.changelogs[side], Partition: p, Key: keys[from:len(keys):len(keys)], Value: r.Value, Timestamp: r.Timestamp}
	j.cl.Produce(ctx, cr, j.promise)

	mine, ok := this.byKey[string(r.Key)]
	if !ok {
		mine = new([]joinedRecord)
		this.byKey[string(r.Key)] = mine
	}
	*mine = append(evict(*mine, this.maxTS), joinedRecord{ts: ts, value: r.Value})
	return keys
}

// evict drops the records of rs, oldest first, that fell out of the
// retention of a buffer whose latest timestamp is maxTS.
func evict(rs []joinedRecord, maxTS int64) []joinedRecord {
	n := 0
	for n < len(rs) && rs[n].ts < maxTS-joinRetention {
		n++
	}
	return rs[n:]
}

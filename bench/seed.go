package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Shape of the seeded records.
const (
	// KeyBytes is the length of every key: "key-" and six digits.
	KeyBytes = 10
	// ValueBytes is the length of every value (JSON, padded with its note
	// field).
	ValueBytes = 100
)

// Key returns the key of the i-th of n distinct keys: "key-000123".
func Key(i, n int) []byte {
	return fmt.Appendf(nil, "key-%06d", i%n)
}

// EnsureTopic creates topic with the given partition count and replication
// factor 1. A topic that already exists is fine if it has that partition
// count; any other partition count is an error.
func EnsureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	_, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		return nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("describing existing topic %s: %w", topic, err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		return fmt.Errorf("describing existing topic %s: %v", topic, d.Err)
	}
	if got := len(d.Partitions); got != partitions {
		return fmt.Errorf("topic %s exists with %d partitions, want %d", topic, got, partitions)
	}
	return nil
}

// Seed creates topic (partitions, replication 1; an existing topic must
// have that partition count) and produces records records to it: keys of
// KeyBytes bytes cycling over keys distinct keys, JSON values of about
// ValueBytes bytes with numeric "amount" and "ts" fields, and timestamps one
// millisecond apart, increasing, ending about now. Records are partitioned
// by key with franz-go's default partitioner (murmur2, as the Java client),
// so a key always lands on the same partition.
//
// A value looks like
//
//	{"id":123,"customer":"key-000123","amount":861.17,"ts":1700000000123,"note":"xxxxxxxx"}
//
// with the note padded so that the value is ValueBytes long.
func Seed(ctx context.Context, brokers []string, topic string, partitions, records, keys int) error {
	if partitions <= 0 || records < 0 || keys <= 0 {
		return fmt.Errorf("seed: partitions %d, records %d and keys %d must be positive", partitions, records, keys)
	}
	if keys > 1_000_000 {
		return fmt.Errorf("seed: %d keys do not fit the %d-byte key format", keys, KeyBytes)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		// Many records buffered and full batches: seeding is not what is
		// measured, it only has to be quick. A batch may be no larger than
		// the broker's max.message.bytes (1 MiB by default, also on kfake).
		kgo.ProducerLinger(50*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.MaxBufferedRecords(250_000),
	)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer cl.Close()

	if err := EnsureTopic(ctx, kadm.NewClient(cl), topic, partitions); err != nil {
		return fmt.Errorf("seed: %w", err)
	}

	// Keys are shared between the records that have them (nothing
	// modifies a produced record's key); values are cut from 1 MiB slabs
	// so that a record costs one allocation, the *kgo.Record.
	keyBytes := make([][]byte, keys)
	for i := range keyBytes {
		keyBytes[i] = Key(i, keys)
	}
	var produceErr firstError
	promise := produceErr.promise
	const slabSize = 1 << 20
	var slab []byte
	start := time.Now().Add(-time.Duration(records) * time.Millisecond).UnixMilli()
	for i := range records {
		if cap(slab)-len(slab) < 2*ValueBytes {
			slab = make([]byte, 0, slabSize)
		}
		ts := start + int64(i)
		from := len(slab)
		slab = appendValue(slab, i, keyBytes[i%keys], ts)
		v := slab[from:len(slab):len(slab)]
		cl.Produce(ctx, &kgo.Record{Key: keyBytes[i%keys], Value: v, Timestamp: time.UnixMilli(ts)}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("seed: flushing: %w", err)
	}
	if err := produceErr.get(); err != nil {
		return fmt.Errorf("seed: producing to %s: %w", topic, err)
	}
	return nil
}

// appendValue appends the JSON value of record i to b.
func appendValue(b []byte, i int, key []byte, ts int64) []byte {
	from := len(b)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"customer":"`...)
	b = append(b, key...)
	b = append(b, `","amount":`...)
	cents := (i * 7919) % 100_000 // 0.00 to 999.99, spread out
	b = strconv.AppendInt(b, int64(cents/100), 10)
	b = append(b, '.', byte('0'+cents/10%10), byte('0'+cents%10))
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"note":"`...)
	for len(b)-from < ValueBytes-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

// firstError keeps the first error that produce promises report. Its
// promise method is the one promise shared by every record, so producing
// allocates no closure per record.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) promise(_ *kgo.Record, err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

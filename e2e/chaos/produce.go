package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// truth is what the outputs must say, computed from what was produced
// or, after broker faults, from what the input topic holds (inputTruth).
type truth struct {
	// perKey is how many inputs each key was sent: its sequence numbers
	// run from 1 to that count.
	perKey map[string]int64
	// windows counts each key's inputs per window.
	windows map[windowKey]int64
	inputs  int

	// copies, when not nil, is how many times the input topic holds each
	// input, and keyInputs how many inputs it holds of each key; nil
	// means each input once, perKey of each key.
	copies    map[inputID]int
	keyInputs map[string]int64
}

// inputID names an input by its key and sequence number.
type inputID struct {
	key string
	seq int64
}

// copiesOf is how many times the input topic holds in.
func (tr truth) copiesOf(in inputID) int {
	if tr.copies == nil {
		return 1
	}
	return tr.copies[in]
}

// inputsOf is how many inputs of key the input topic holds.
func (tr truth) inputsOf(key string) int64 {
	if tr.keyInputs == nil {
		return tr.perKey[key]
	}
	return tr.keyInputs[key]
}

// windowKey names one key's window by its start, in milliseconds.
type windowKey struct {
	key   string
	start int64
}

// windowStart is the start of the tumbling window that holds ts, as the
// runtime computes it.
func windowStart(ts int64) int64 {
	size := WindowSize.Milliseconds()
	return ts / size * size
}

// keyPartitioner is the producer's partitioner, Kafka's murmur2 of the
// key; the flush records' keys are chosen with it.
var keyPartitioner = kgo.StickyKeyPartitioner(nil)

// produce writes o.Records inputs to chaos-in at a steady rate over
// o.Duration, each on a random key of o.Keys with the key's next sequence
// number, with event times that grow with the production order by
// o.Duration/o.Records. Then it writes one flush record to every
// partition, stamped far enough ahead to close every window of the inputs.
// cl must be idempotent (kgo's default) and partition with keyPartitioner,
// so that an input is written once and its key always lands on the same
// partition. produced is updated as records are acknowledged.
func produce(ctx context.Context, cl *kgo.Client, o Options, rng *rand.Rand, produced *atomic.Int64) (truth, error) {
	tr := truth{perKey: make(map[string]int64), windows: make(map[windowKey]int64)}
	var (
		mu       sync.Mutex
		firstErr error
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("producing %s (timestamp %d): %w", r.Key, r.Timestamp.UnixMilli(), err)
			}
			mu.Unlock()
			return
		}
		produced.Add(1)
	}
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return firstErr
	}

	start := time.Now()
	t0 := start.UnixMilli()
	step := float64(o.Duration.Milliseconds()) / float64(o.Records)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var lastTS int64
	for i := 0; i < o.Records; {
		select {
		case <-ctx.Done():
			return tr, ctx.Err()
		case <-tick.C:
		}
		if err := failed(); err != nil {
			return tr, err
		}
		due := min(o.Records, int(float64(o.Records)*float64(time.Since(start))/float64(o.Duration))+1)
		for ; i < due; i++ {
			key := fmt.Sprintf("k%04d", rng.IntN(o.Keys))
			tr.perKey[key]++
			ts := t0 + int64(float64(i)*step)
			tr.windows[windowKey{key, windowStart(ts)}]++
			lastTS = ts
			cl.Produce(ctx, &kgo.Record{
				Topic:     InputTopic,
				Key:       []byte(key),
				Value:     encodeInput(Input{Key: key, Seq: tr.perKey[key]}),
				Timestamp: time.UnixMilli(ts),
			}, promise)
		}
	}
	tr.inputs = o.Records

	// Each task's stream time must pass the last window's end plus its
	// grace; ten windows ahead leaves no doubt.
	flushTS := lastTS + 10*(WindowSize+WindowGrace).Milliseconds()
	for p, key := range flushKeys(o.Partitions) {
		cl.Produce(ctx, &kgo.Record{
			Topic:     InputTopic,
			Key:       []byte(key),
			Value:     encodeInput(Input{Key: key, Seq: int64(p)}),
			Timestamp: time.UnixMilli(flushTS),
		}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return tr, fmt.Errorf("flushing inputs: %w", err)
	}
	return tr, failed()
}

// flushKeys returns, for every partition of chaos-in, a key that the
// producer's partitioner puts there.
func flushKeys(partitions int) []string {
	part := keyPartitioner.ForTopic(InputTopic)
	keys := make([]string, partitions)
	left := partitions
	for i := 0; left > 0; i++ {
		key := fmt.Sprintf("%s%d", flushKeyPrefix, i)
		p := part.Partition(&kgo.Record{Key: []byte(key)}, partitions)
		if keys[p] == "" {
			keys[p] = key
			left--
		}
	}
	return keys
}

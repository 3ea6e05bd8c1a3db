package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// BraidVariants returns the Braid side of the pipe benchmark: the gated
// Filter+MapValues topology on the bytes serde, whose functions do
// trivial work so that it measures the runtime's own cost per record, and
// beside it, ungated, the same topology decoding and encoding JSON.
func BraidVariants() []Variant {
	return []Variant{
		{Name: "braid filter+mapValues (bytes serde)", Gated: true, Out: BraidOutputTopic, Run: BraidPipe(streams.Bytes, streams.Bytes)},
		{Name: "braid filter+mapValues (json serde)", Out: BraidOutputTopic + "-json", Run: BraidPipe(streams.String, streams.JSON)},
	}
}

// BraidPipe returns a PipeFunc that runs in -> Filter -> MapValues -> out
// as a Braid App with the given serdes, at-least-once, committing
// every second, with the raw pipe's client options. It measures the same
// span as RawPipe: from the call until every record is processed, its
// output flushed and its offset committed.
func BraidPipe(keySerde, valueSerde streams.Serde) PipeFunc {
	return func(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
		start := time.Now()
		topo, err := pipeTopology(keySerde, valueSerde, in, out)
		if err != nil {
			return Result{}, err
		}
		return runUntilCommitted(ctx, start, topo, streams.Config{
			// A new group each call, so that every round reads the input
			// from the start.
			ApplicationID:  fmt.Sprintf("bench-braid-%s-%s-%d", keySerde.Name(), valueSerde.Name(), braidRuns.Add(1)),
			Brokers:        brokers,
			CommitInterval: time.Second,
			ClientOptions:  ClientOptions(),
		}, records)
	}
}

// pipeTopology is the pipe benchmark's topology: in -> Filter (value not
// nil) -> MapValues (identity) -> out, with the given serdes.
func pipeTopology(keySerde, valueSerde streams.Serde, in, out string) (*streams.Topology, error) {
	b := streams.NewBuilder()
	b.Stream([]string{in}, streams.WithSerdes(keySerde, valueSerde)).
		Filter(func(_, v any) (bool, error) { return v != nil, nil }).
		MapValues(func(v any) (any, error) { return v, nil }).
		To(out, streams.WithSerdes(keySerde, valueSerde))
	return b.Build()
}

// braidRuns numbers BraidPipe calls for their application ids.
var braidRuns atomic.Int64

func processed(app *streams.App) int64 {
	var n int64
	for _, t := range app.Stats().Tasks {
		n += t.Processed
	}
	return n
}

// firstRecordWatcher notes when the App began to process its first
// record: the earliest TaskResumedEvent.FirstRecordAt. The App publishes
// its processed counts once per poll, and a poll at start-up, with every
// record there already, may take a few hundred thousand of them: the
// counts alone would put the first record at the end of that poll.
type firstRecordWatcher struct {
	mu sync.Mutex
	at time.Time
}

func (w *firstRecordWatcher) OnTaskResumed(e streams.TaskResumedEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at.IsZero() || e.FirstRecordAt.Before(w.at) {
		w.at = e.FirstRecordAt
	}
}

func (w *firstRecordWatcher) first() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

// commitWatcher notes when the committed offsets first cover every record.
type commitWatcher struct {
	want int64

	mu        sync.Mutex
	committed map[streams.TopicPartition]int64
	done      chan time.Time
}

func (w *commitWatcher) OnCommit(e streams.CommitEvent) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.committed == nil {
		w.committed = make(map[streams.TopicPartition]int64)
	}
	var total int64
	for tp, off := range e.Offsets {
		w.committed[tp] = off
	}
	for _, off := range w.committed {
		total += off
	}
	if total >= w.want {
		select {
		case w.done <- now:
		default:
		}
	}
}

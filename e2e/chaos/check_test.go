package chaos

import (
	"encoding/json"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// outputBuilder builds output records in the workers' formats, in the order
// given, each at the next offset of partition 0.
type outputBuilder struct {
	recs map[string][]*kgo.Record
}

func (o *outputBuilder) add(topic string, key, value []byte) {
	if o.recs == nil {
		o.recs = make(map[string][]*kgo.Record)
	}
	o.recs[topic] = append(o.recs[topic], &kgo.Record{Topic: topic, Key: key, Value: value, Offset: int64(len(o.recs[topic]))})
}

func (o *outputBuilder) mapped(key string, seq int64) {
	v, _ := json.Marshal(Mapped{Key: key, Seq: seq, By: "worker-1"})
	o.add(MappedTopic, []byte(key), v)
}

func (o *outputBuilder) count(key string, n int64) {
	v, _ := streams.Int64.Serialize(CountsTopic, n)
	o.add(CountsTopic, []byte(key), v)
}

func (o *outputBuilder) window(key string, start, n int64) {
	k, _ := streams.WindowedJSON(streams.String).Serialize(WindowsTopic, streams.Windowed{Key: key, Start: start, End: start + WindowSize.Milliseconds()})
	v, _ := streams.Int64.Serialize(WindowsTopic, n)
	o.add(WindowsTopic, k, v)
}

func (o *outputBuilder) check(exactly bool, tr truth) Report {
	rep := Report{Guarantee: streams.AtLeastOnce}
	if exactly {
		rep.Guarantee = streams.ExactlyOnce
	}
	c := &checker{exactly: exactly, tr: tr, rep: &rep, kept: make(map[[2]string]int)}
	c.checkMapped(o.recs[MappedTopic])
	c.checkCounts(o.recs[CountsTopic])
	c.checkWindows(o.recs[WindowsTopic])
	return rep
}

// The checks count what a run can go wrong with, and flush records do
// not count.
func TestChecks(t *testing.T) {
	// Key a got 3 inputs, 2 in the window at 0 and 1 in the next; key b
	// got 1, in the window at 0.
	size := WindowSize.Milliseconds()
	tr := truth{
		perKey:  map[string]int64{"a": 3, "b": 1},
		windows: map[windowKey]int64{{"a", 0}: 2, {"a", size}: 1, {"b", 0}: 1},
		inputs:  4,
	}
	for _, tt := range []struct {
		name    string
		outputs func(o *outputBuilder)
		// want is duplicates, lost and wrong counts under exactly-once
		// and under at-least-once.
		eos, alo [3]int
	}{{
		name: "all correct",
		outputs: func(o *outputBuilder) {
			o.mapped("a", 1)
			o.mapped("a", 2)
			o.mapped("b", 1)
			o.mapped("a", 3)
			o.mapped("flush-0", 0)
			o.count("a", 2)
			o.count("b", 1)
			o.count("a", 3)
			o.count("flush-0", 1)
			o.window("a", 0, 2)
			o.window("b", 0, 1)
			o.window("a", size, 1)
		},
	}, {
		name: "replayed after a crash",
		outputs: func(o *outputBuilder) {
			o.mapped("a", 1)
			o.mapped("a", 2)
			o.mapped("a", 2) // a second copy
			o.mapped("b", 1)
			o.mapped("a", 3)
			o.count("a", 2)
			o.count("a", 2) // a repeat
			o.count("b", 1)
			o.count("a", 4) // one counted twice
			o.window("a", 0, 2)
			o.window("a", 0, 2) // a second result
			o.window("b", 0, 1)
			o.window("a", size, 2) // one counted twice
		},
		eos: [3]int{3, 0, 2},
		alo: [3]int{5, 0, 0},
	}, {
		name: "lost",
		outputs: func(o *outputBuilder) {
			o.mapped("a", 1)
			o.mapped("a", 3) // seq 2 and b's are missing
			o.count("a", 2)  // b's count is missing, a's too low
			o.window("a", 0, 1)
			o.window("a", size, 1) // a's first is too low, b's missing
		},
		eos: [3]int{0, 4, 2},
		alo: [3]int{0, 6, 0},
	}, {
		name: "made up",
		outputs: func(o *outputBuilder) {
			o.mapped("a", 1)
			o.mapped("a", 2)
			o.mapped("a", 3)
			o.mapped("b", 1)
			o.mapped("b", 2) // never produced
			o.count("a", 3)
			o.count("b", 1)
			o.count("c", 1) // a key never produced
			o.window("a", 0, 2)
			o.window("a", size, 1)
			o.window("b", 0, 1)
			o.window("b", size, 1) // a window with no input
		},
		eos: [3]int{0, 0, 3},
		alo: [3]int{0, 0, 3},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var o outputBuilder
			tt.outputs(&o)
			for _, exactly := range []bool{true, false} {
				want := tt.alo
				if exactly {
					want = tt.eos
				}
				rep := o.check(exactly, tr)
				if got := [3]int{rep.Duplicates, rep.Lost, rep.WrongCounts}; got != want {
					t.Errorf("%s: duplicates, lost, wrong = %v, want %v\n%s", rep.Guarantee, got, want, rep.Details())
				}
			}
		})
	}
}

func TestResultLine(t *testing.T) {
	r := Report{Guarantee: streams.ExactlyOnce, Kills: 22, Inputs: 60000, Duplicates: 1, Lost: 2, WrongCounts: 3}
	if got, want := r.ResultLine(), "RESULT chaos kills=22 inputs=60000 duplicates=1 lost=2 wrong_counts=3"; got != want {
		t.Errorf("exactly-once: %q, want %q", got, want)
	}
	r.Guarantee = streams.AtLeastOnce
	if got, want := r.ResultLine(), "RESULT chaos-at-least-once kills=22 inputs=60000 duplicates=1 lost=2 wrong_counts=3"; got != want {
		t.Errorf("at-least-once: %q, want %q", got, want)
	}
}

// Every partition gets a flush key that the producer's partitioner puts
// there.
func TestFlushKeys(t *testing.T) {
	part := keyPartitioner.ForTopic(InputTopic)
	for p, key := range flushKeys(6) {
		if got := part.Partition(&kgo.Record{Key: []byte(key)}, 6); got != p || !isFlushKey(key) {
			t.Errorf("flush key %q goes to partition %d, want %d", key, got, p)
		}
	}
}

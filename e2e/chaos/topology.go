package chaos

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// The topics of the chaos application. The driver creates them; the
// workers create only their internal changelogs.
const (
	InputTopic   = "chaos-in"
	MappedTopic  = "chaos-mapped"
	CountsTopic  = "chaos-counts"
	WindowsTopic = "chaos-windows"
)

// The windows of the windowed count: tumbling, with a grace period that no
// input needs (event time only grows), so a window closes only when stream
// time has passed it by WindowGrace.
const (
	WindowSize  = 2 * time.Second
	WindowGrace = 1 * time.Second
)

// flushKeyPrefix starts the keys of the records that close the last
// windows, one per input partition; the checks skip them.
const flushKeyPrefix = "flush-"

// Input is the value of an input record: its key again and the key's
// sequence number, from 1, so that every output record names the input it
// came from.
type Input struct {
	Key string `json:"key"`
	Seq int64  `json:"seq"`
}

// Mapped is the value of a chaos-mapped record: the input it maps and the
// worker instance that mapped it, which tells where a duplicate came from.
type Mapped struct {
	Key string `json:"key"`
	Seq int64  `json:"seq"`
	By  string `json:"by"`
}

// Topology returns the chaos application's topology as instance runs it:
// every input is mapped to chaos-mapped, counted per key to chaos-counts
// (through the record cache, so counts are sent at commits) and counted
// per key and tumbling window to chaos-windows, one final result per
// window when it closes. Event time is the input record's timestamp.
func Topology(instance string) (*streams.Topology, error) {
	b := streams.NewBuilder()
	in := b.Stream([]string{InputTopic}, streams.WithSerdes(streams.String, streams.JSON))
	in.MapValues(func(v any) (any, error) {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("input value is %T, want a JSON object", v)
		}
		return map[string]any{"key": obj["key"], "seq": obj["seq"], "by": instance}, nil
	}, streams.Named("map")).
		To(MappedTopic, streams.WithSerdes(streams.String, streams.JSON))
	in.GroupByKey().
		Count(streams.Named("count"), streams.Materialized(streams.StoreOptions{Name: "counts"})).
		ToStream().
		To(CountsTopic, streams.WithSerdes(streams.String, streams.Int64))
	in.GroupByKey().
		WindowedBy(streams.Tumbling(WindowSize, WindowGrace)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Named("window-count"), streams.Materialized(streams.StoreOptions{Name: "window-counts"})).
		ToStream().
		To(WindowsTopic, streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	return b.Build()
}

// ParseGuarantee reads a guarantee as its String method writes it.
func ParseGuarantee(s string) (streams.Guarantee, error) {
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		if s == g.String() {
			return g, nil
		}
	}
	return 0, fmt.Errorf("unknown guarantee %q, want exactly-once or at-least-once", s)
}

func isFlushKey(key string) bool { return strings.HasPrefix(key, flushKeyPrefix) }

func encodeInput(in Input) []byte {
	b, _ := json.Marshal(in) // a string and an int always encode
	return b
}

package streams

import (
	"errors"
	"fmt"
)

// ErrNullKey and ErrNullValue are what a SkippedRecord's Err wraps when an
// aggregation skipped a record for its null key or value, as Kafka Streams
// skips them. Which records each aggregation skips is Kafka Streams' rule:
// every aggregation skips a null key; Count, Reduce and Aggregate of a
// GroupedStream and every aggregation over sliding windows also skip a
// null value, while the aggregations over time and session windows fold
// it in like any value (a windowed Count counts it).
var (
	ErrNullKey   = errors.New("null key")
	ErrNullValue = errors.New("null value")
)

// skipNull counts and logs a record that operator node skips for its null
// key or value (why is ErrNullKey or ErrNullValue). It is no error: the
// error handlers and the dead-letter topic do not see it, but it counts
// in TaskStats.Skipped and the RecordSkippedHooks hear of it, as Kafka
// Streams logs it and counts it in its dropped-records metric.
func (t *task) skipNull(node string, why error) {
	t.skipped++
	err := fmt.Errorf("skipping record at %s: %w", node, why)
	ev := SkippedRecord{Task: t.id, Offset: -1, Err: err}
	if r := t.current; r != nil {
		ev.Topic, ev.Partition, ev.Offset = r.Topic, r.Partition, r.Offset
	}
	t.app.log.Warn("skipping record", "task", t.id.String(), "node", node, "reason", why.Error(),
		"topic", ev.Topic, "partition", ev.Partition, "offset", ev.Offset)
	for _, h := range t.app.hooks.skipped {
		h.OnRecordSkipped(ev)
	}
}

// skipsNull reports whether an aggregation that takes null values (over
// time or session windows) or one that does not must skip r, and skips
// it.
func skipsNull(t *task, node string, r record, takesNullValues bool) bool {
	switch {
	case r.key == nil:
		t.skipNull(node, ErrNullKey)
	case r.value == nil && !takesNullValues:
		t.skipNull(node, ErrNullValue)
	default:
		return false
	}
	return true
}

// skipNullKeyOrValue skips r, which has a null key or value, for an
// aggregation that takes neither.
func skipNullKeyOrValue(t *task, node string, r record) error {
	skipsNull(t, node, r, false)
	return nil
}

package streams

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// skipLog records skipped records into the same log as the Peek, so that
// the order of skipping and processing can be checked.
type skipLog struct{ log *[]string }

func (s skipLog) OnRecordSkipped(r SkippedRecord) {
	*s.log = append(*s.log, fmt.Sprintf("skipped %s@%d", r.Topic, r.Offset))
}

// mergeTask builds task 0_0 of Merge(stream "a", stream "b") -> Peek, the
// way the App builds it on assignment, with one queue per topic. The Peek
// appends "<value>" to the returned log. No sinks: the task never needs a
// client.
func mergeTask(t *testing.T, handling ErrorHandling, valueSerde Serde) (*task, *[]string) {
	t.Helper()
	log := new([]string)
	b := NewBuilder()
	sa := b.Stream([]string{"a"}, WithSerdes(String, valueSerde))
	sb := b.Stream([]string{"b"}, WithSerdes(String, valueSerde))
	sa.Merge(sb).Peek(func(_, v any) { *log = append(*log, fmt.Sprint(v)) })
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.subtopologies) != 1 {
		t.Fatalf("%d sub-topologies, want 1", len(topo.subtopologies))
	}
	cfg := Config{ApplicationID: "white-box", Brokers: []string{"unused:9092"}, DeserializationErrors: handling, Hooks: []Hook{skipLog{log}}}.WithDefaults()
	a := &App{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), hooks: newHookSet(cfg.Hooks)}
	st := topo.subtopologies[0]
	tk, err := a.newTask(st, TaskID{0, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range st.sources {
		tk.addPartition(TopicPartition{src.topics[0], 0}, tk.sources[src])
	}
	if got := tk.partitions(); !slices.Equal(got, []TopicPartition{{"a", 0}, {"b", 0}}) {
		t.Fatalf("task partitions %v, want a/0 and b/0", got)
	}
	return tk, log
}

// recs returns records of topic/0 from offset first on, one per timestamp,
// each valued "<topic><timestamp>".
func recs(topic string, first int64, timestamps ...int64) []*kgo.Record {
	var out []*kgo.Record
	for i, ts := range timestamps {
		out = append(out, &kgo.Record{
			Topic: topic, Partition: 0, Offset: first + int64(i), LeaderEpoch: 3,
			Timestamp: time.UnixMilli(ts),
			Value:     fmt.Appendf(nil, "%s%d", topic, ts),
		})
	}
	return out
}

// TestTaskProcessesLowestTimestampFirst checks that a task with two input
// partitions interleaves their buffered records by timestamp, across
// batch boundaries, tracks stream time as the largest timestamp and
// advances each queue's commit offset past its last record.
func TestTaskProcessesLowestTimestampFirst(t *testing.T) {
	tk, log := mergeTask(t, FailOnError, String)
	qa, qb := tk.queues[0], tk.queues[1]
	qa.push(recs("a", 100, 1, 4))
	qa.push(recs("a", 102, 5, 9))
	qb.push(recs("b", 7, 2, 3, 7))
	qb.push(recs("b", 10, 8))

	if err := tk.processAvailable(); err != nil {
		t.Fatalf("processAvailable: %v", err)
	}
	if want := []string{"a1", "b2", "b3", "a4", "a5", "b7", "b8", "a9"}; !slices.Equal(*log, want) {
		t.Errorf("processed %v, want %v", *log, want)
	}
	if tk.streamTime != 9 {
		t.Errorf("stream time %d, want 9", tk.streamTime)
	}
	if tk.processed != 8 || tk.skipped != 0 {
		t.Errorf("processed %d, skipped %d; want 8 and 0", tk.processed, tk.skipped)
	}
	if want := (kgo.EpochOffset{Epoch: 3, Offset: 104}); qa.next != want {
		t.Errorf("a/0 next offset %+v, want %+v", qa.next, want)
	}
	if want := (kgo.EpochOffset{Epoch: 3, Offset: 11}); qb.next != want {
		t.Errorf("b/0 next offset %+v, want %+v", qb.next, want)
	}
	if !qa.empty() || !qb.empty() {
		t.Errorf("queues not empty after processing: a %v, b %v", qa.batches, qb.batches)
	}

	// Stream time never goes back: an older record is processed but
	// leaves it at the maximum.
	*log = nil
	qb.push(recs("b", 11, 6))
	qa.push(recs("a", 104, 12))
	if err := tk.processAvailable(); err != nil {
		t.Fatalf("processAvailable: %v", err)
	}
	if want := []string{"b6", "a12"}; !slices.Equal(*log, want) {
		t.Errorf("processed %v, want %v", *log, want)
	}
	if tk.streamTime != 12 {
		t.Errorf("stream time %d, want 12", tk.streamTime)
	}
}

// TestTaskHandlesUndecodableHeadFirst checks that an undecodable head is
// handled before any decodable record, whatever its timestamp: skipped and
// counted with LogAndContinue, failing the task with FailOnError, with
// nothing processed and its offset not advanced.
func TestTaskHandlesUndecodableHeadFirst(t *testing.T) {
	push := func(tk *task) {
		tk.queues[0].push([]*kgo.Record{
			{Topic: "a", Offset: 0, Timestamp: time.UnixMilli(1), Value: []byte(`"a1"`)},
			{Topic: "a", Offset: 1, Timestamp: time.UnixMilli(3), Value: []byte(`"a3"`)},
		})
		tk.queues[1].push([]*kgo.Record{
			{Topic: "b", Offset: 0, Timestamp: time.UnixMilli(50), Value: []byte(`not json`)},
			{Topic: "b", Offset: 1, Timestamp: time.UnixMilli(2), Value: []byte(`"b2"`)},
		})
	}

	t.Run("LogAndContinue", func(t *testing.T) {
		tk, log := mergeTask(t, LogAndContinue, JSON)
		push(tk)
		if err := tk.processAvailable(); err != nil {
			t.Fatalf("processAvailable: %v", err)
		}
		if want := []string{"skipped b@0", "a1", "b2", "a3"}; !slices.Equal(*log, want) {
			t.Errorf("events %v, want %v", *log, want)
		}
		if tk.processed != 4 || tk.skipped != 1 {
			t.Errorf("processed %d, skipped %d; want 4 and 1", tk.processed, tk.skipped)
		}
		if tk.streamTime != 3 {
			t.Errorf("stream time %d, want 3: a skipped record must not move it", tk.streamTime)
		}
		if tk.queues[0].next.Offset != 2 || tk.queues[1].next.Offset != 2 {
			t.Errorf("next offsets a %d, b %d; want 2 and 2", tk.queues[0].next.Offset, tk.queues[1].next.Offset)
		}
	})

	t.Run("FailOnError", func(t *testing.T) {
		tk, log := mergeTask(t, FailOnError, JSON)
		push(tk)
		err := tk.processAvailable()
		var tf *TaskFailedError
		var de *DeserializationError
		if !errors.As(err, &tf) || !errors.As(err, &de) {
			t.Fatalf("processAvailable: %v (%T), want a *TaskFailedError wrapping a *DeserializationError", err, err)
		}
		if want := (DeserializationError{Topic: "b", Partition: 0, Offset: 0, Part: "value", Err: de.Err}); *de != want {
			t.Errorf("DeserializationError %+v, want %+v", *de, want)
		}
		if len(*log) != 0 {
			t.Errorf("processed %v before the undecodable head, want nothing", *log)
		}
		if tk.processed != 0 || tk.streamTime != -1 {
			t.Errorf("processed %d, stream time %d; want 0 and -1", tk.processed, tk.streamTime)
		}
		if tk.queues[0].next.Offset > 0 || tk.queues[1].next.Offset > 0 {
			t.Errorf("next offsets a %d, b %d; want neither past offset 0", tk.queues[0].next.Offset, tk.queues[1].next.Offset)
		}
		// The failing record stays the head: nothing is lost.
		if raw := tk.queues[1].peekRaw(); raw.Offset != 0 {
			t.Errorf("head of b/0 is offset %d, want the failing record at 0", raw.Offset)
		}
	})
}

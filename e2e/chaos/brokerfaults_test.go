package chaos

import (
	"context"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	embedded "github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseFaults(t *testing.T) {
	all, err := ParseFaults("all", false)
	if err != nil || len(all) != len(BrokerFaults) {
		t.Fatalf("ParseFaults(all) = %v, %v", all, err)
	}
	for i, f := range all {
		if f.String() != BrokerFaults[i] {
			t.Errorf("fault %d reads back as %q, want %q", i, f, BrokerFaults[i])
		}
	}
	if got := all[2]; got.kind != killRestart || got.For != time.Minute {
		t.Errorf("kill-restart-60s = %+v", got)
	}
	if none, err := ParseFaults("none", false); err != nil || len(none) != 0 {
		t.Errorf("ParseFaults(none) = %v, %v", none, err)
	}
	some, err := ParseFaults("cut-1500ms, stop-2s", false)
	if err != nil || len(some) != 2 || some[0].String() != "cut-1.5s" || some[1].kind != stopCont {
		t.Errorf("ParseFaults(cut-1500ms, stop-2s) = %v, %v", some, err)
	}
	for _, bad := range []string{"kill-5s", "cut", "cut-", "cut-soon", "stop--1s", "stop-0s"} {
		if _, err := ParseFaults(bad, false); err == nil || !strings.Contains(err.Error(), "broker fault") {
			t.Errorf("ParseFaults(%q) = %v, want an error naming the fault", bad, err)
		}
	}
	kafka, err := ParseFaults("all", true)
	if err != nil || len(kafka) != len(KafkaFaults) {
		t.Fatalf("ParseFaults(all, kafka) = %v, %v", kafka, err)
	}
	for i, f := range kafka {
		if f.String() != KafkaFaults[i] {
			t.Errorf("Kafka fault %d reads back as %q, want %q", i, f, KafkaFaults[i])
		}
	}
	if got := kafka[0]; got.kind != leaderKill || got.For != 20*time.Second {
		t.Errorf("leader-kill-20s = %+v", got)
	}
	// Each broker's faults only on that broker; stop on both.
	for _, c := range []struct {
		list  string
		kafka bool
	}{{"cut-5s", true}, {"kill-restart-5s", true}, {"leader-kill-5s", false}, {"controller-kill-5s", false}, {"cluster-restart-5s", false}} {
		if _, err := ParseFaults(c.list, c.kafka); err == nil || !strings.Contains(err.Error(), "broker fault") {
			t.Errorf("ParseFaults(%q, kafka %v) = %v, want an error naming the fault", c.list, c.kafka, err)
		}
	}
	if _, err := ParseFaults("stop-15s", true); err != nil {
		t.Errorf("ParseFaults(stop-15s, kafka) = %v", err)
	}
}

// A commit log reads back as the commits written to it, a line cut short
// by a kill skipped, and waitCommits finds each worker's first commit
// that began after a moment.
func TestCommitLog(t *testing.T) {
	dir := t.TempDir()
	ws := &workers{logs: dir, commitLogs: true, procs: make([]*proc, 2)}
	at := time.UnixMilli(1_700_000_000_000)
	write := func(i int, lines ...string) {
		f, err := os.OpenFile(ws.commitLogPath(i), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, l := range lines {
			f.WriteString(l)
		}
	}
	// worker-1: a commit of 50 ms ending at +1 s, one of 300 ms ending at
	// +2 s (so begun at +1.7 s), one cut short. worker-2: one at +3 s.
	write(0, CommitLine(at.Add(time.Second), 50*time.Millisecond), CommitLine(at.Add(2*time.Second), 300*time.Millisecond), "commit end_us=17")
	write(1, CommitLine(at.Add(3*time.Second), time.Millisecond))
	spans, err := readCommitLog(ws.commitLogPath(0))
	if err != nil || len(spans) != 2 {
		t.Fatalf("readCommitLog = %v, %v; want 2 commits", spans, err)
	}
	if !spans[1].start.Equal(at.Add(1700*time.Millisecond)) || !spans[1].end.Equal(at.Add(2*time.Second)) {
		t.Errorf("second commit %v to %v, want +1.7 s to +2 s", spans[1].start, spans[1].end)
	}
	first, err := waitCommits(t.Context(), ws, at.Add(1500*time.Millisecond), 1, time.Second, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !first["worker-1"].Equal(at.Add(2*time.Second)) || !first["worker-2"].Equal(at.Add(3*time.Second)) {
		t.Errorf("first commits after +1.5 s: %v", first)
	}
	if second, err := waitCommits(t.Context(), ws, at, 2, 200*time.Millisecond, "before the fault"); err == nil || !strings.Contains(err.Error(), "worker-2 made fewer than 2 commits") || !second["worker-1"].Equal(at.Add(2*time.Second)) {
		t.Errorf("second commits after +0 s: %v, %v", second, err)
	}
	// A commit that began before the moment and ended after does not
	// count: it may have been stuck through the fault.
	_, err = waitCommits(t.Context(), ws, at.Add(1800*time.Millisecond), 1, 200*time.Millisecond, "after stop-1s the broker was back, but")
	if err == nil || !strings.Contains(err.Error(), "after stop-1s the broker was back, but: worker-1 made no commit within 200ms") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "worker-1.log")) {
		t.Errorf("waitCommits with worker-1 not resumed: %v", err)
	}
}

// The outputs are checked against what the input topic holds: an input
// the broker wrote twice must be processed twice, one it lost not at all,
// and both are counted as the broker's.
func TestInputTruth(t *testing.T) {
	size := WindowSize.Milliseconds()
	sent := truth{perKey: map[string]int64{"a": 3, "b": 1}, inputs: 4}
	in := func(key string, seq, ts int64) *kgo.Record {
		return &kgo.Record{Key: []byte(key), Value: encodeInput(Input{Key: key, Seq: seq}), Timestamp: time.UnixMilli(ts)}
	}
	// a/2 twice, a/3 lost, a flush record.
	held, lost, dup := inputTruth(sent, []*kgo.Record{in("a", 1, 0), in("a", 2, 1), in("a", 2, 1), in("b", 1, size), in("flush-0", 0, 10*size)})
	if lost != 1 || dup != 1 || held.inputs != 4 {
		t.Fatalf("lost %d, duplicated %d, held %d inputs; want 1, 1, 4", lost, dup, held.inputs)
	}
	var o outputBuilder
	o.mapped("a", 1)
	o.mapped("a", 2)
	o.mapped("a", 2)
	o.mapped("b", 1)
	o.count("a", 2)
	o.count("a", 3)
	o.count("b", 1)
	o.window("a", 0, 3)
	o.window("b", size, 1)
	for _, exactly := range []bool{true, false} {
		rep := o.check(exactly, held)
		if rep.Duplicates+rep.Lost+rep.WrongCounts != 0 {
			t.Errorf("exactly-once %v: outputs that follow the topic have problems:\n%s", exactly, rep.Details())
		}
	}
	// One copy of a/2 processed is one lost.
	var short outputBuilder
	short.mapped("a", 1)
	short.mapped("a", 2)
	short.mapped("b", 1)
	if rep := short.check(true, held); rep.Lost < 1 {
		t.Errorf("a/2 mapped once of twice: lost %d, want 1\n%s", rep.Lost, rep.Details())
	}
}

// What produce sends is what readTopics reads back from the input topic,
// every input once.
func TestInputsReadBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := connect(ctx, b.Addrs(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o := Options{Records: 500, Keys: 7, Duration: 500 * time.Millisecond, Partitions: 3}
	var produced atomic.Int64
	sent, err := produce(ctx, cl, o, rand.New(rand.NewPCG(1, 2)), &produced)
	if err != nil {
		t.Fatal(err)
	}
	in, err := readTopics(ctx, b.Addrs(), []string{InputTopic}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held, lost, dup := inputTruth(sent, in.records[InputTopic])
	if lost != 0 || dup != 0 || held.inputs != o.Records || len(in.records[InputTopic]) != o.Records+o.Partitions {
		t.Errorf("read back %d records, %d inputs, lost %d, duplicated %d; want %d inputs and %d flush records", len(in.records[InputTopic]), held.inputs, lost, dup, o.Records, o.Partitions)
	}
	if !maps.Equal(held.windows, sent.windows) {
		t.Errorf("the windows read back differ from those sent")
	}
}

func TestFaultsResultLine(t *testing.T) {
	kill, _ := ParseFault("kill-restart-5s")
	ok := FaultReport{Report: Report{Guarantee: streams.ExactlyOnce}, Fault: kill, Resume: map[string]time.Duration{"worker-1": 800 * time.Millisecond, "worker-2": 1200 * time.Millisecond}}
	slow := ok
	slow.Report.Guarantee = streams.AtLeastOnce
	slow.Resume = map[string]time.Duration{"worker-1": 12 * time.Second}
	slow.Report.Duplicates = 7 // at-least-once: allowed, not counted
	lossy := ok
	lossy.BrokerLost, lossy.Report.Lost, lossy.Report.Duplicates = 1, 2, 3
	failed := ok
	failed.Failure = "worker-1 exited by itself"
	if err := ok.Err(); err != nil {
		t.Errorf("a clean fault: %v", err)
	}
	for _, r := range []FaultReport{slow, lossy, failed} {
		if r.Err() == nil {
			t.Errorf("%+v counts as recovered", r)
		}
	}
	if err := slow.Err(); !strings.Contains(err.Error(), "worker-1 resumed in 12s, over 10s") {
		t.Errorf("slow: %v", err)
	}
	got := FaultsResultLine([]FaultReport{ok, slow, lossy, failed})
	if want := "RESULT broker-faults faults=4 recovered=1 lost=3 duplicates=3 max_resume_ms=12000"; got != want {
		t.Errorf("FaultsResultLine = %q, want %q", got, want)
	}
}

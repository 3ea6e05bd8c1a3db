package streams_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSupervisorCrashAndWipeRestoresEverything counts 40,000 users on one
// partition, then crashes the only instance and wipes its disk: it comes
// back running under its id and restores its store from the first offset
// of the changelog to its end, reporting progress at least every
// RestoreProgressRecords records with the offset reached, and answers with
// every count again.
func TestSupervisorCrashAndWipeRestoresEverything(t *testing.T) {
	const users = 40_000
	b := startBroker(t)
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	rl := &restoreLog{}
	cfg := testConfig(b, "wipe")
	cfg.StateDir = t.TempDir()
	cfg.Hooks = []streams.Hook{rl}
	sup := runSupervisor(t, countTopology(t, true), cfg, 1)
	recs := make([]*kgo.Record, 0, users)
	for i := range users {
		recs = append(recs, &kgo.Record{Topic: "clicks", Key: fmt.Appendf(nil, "user-%06d", i), Value: []byte("click")})
	}
	produce(t, b, recs...)
	counted := func() bool {
		for _, i := range []int{0, users / 2, users - 1} {
			if v, ok, err := sup.Get("clicks-per-user", fmt.Sprintf("user-%06d", i)); err != nil || !ok || v.(int64) != 1 {
				return false
			}
		}
		return true
	}
	waitFor(t, 2*time.Minute, "every user counted", counted)
	changelog := "wipe-clicks-per-user-changelog"
	waitFor(t, time.Minute, "every count in the changelog", func() bool { return endOffsets(t, b, changelog)[0] >= users })
	end := endOffsets(t, b, changelog)[0]
	dir := sup.StateDir("instance-1")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("state dir before the wipe: %v", err)
	}

	if err := sup.CrashAndWipe("instance-1"); err != nil {
		t.Fatal(err)
	}
	if st := sup.Instances()[0].State; st != streams.InstanceRunning {
		t.Errorf("after CrashAndWipe the instance is %s, want running", st)
	}
	waitFor(t, 2*time.Minute, "the restore's end", func() bool { return rl.ended() == 1 })
	waitFor(t, time.Minute, "every user counted again", counted)
	starts, progress, ends := rl.snapshot()
	if len(starts) != 1 || starts[0].StartOffset != 0 || starts[0].EndOffset != end {
		t.Fatalf("restore starts %+v, want one from offset 0 to %d: the wiped store restores the whole changelog", starts, end)
	}
	if ends[0].Restored != end || ends[0].Offset != end {
		t.Errorf("restore end: %d records restored, offset %d; want %d and %d", ends[0].Restored, ends[0].Offset, end, end)
	}
	if len(progress) < int(end/streams.RestoreProgressRecords) {
		t.Errorf("%d progress events for %d records, want one every %d records at least", len(progress), end, streams.RestoreProgressRecords)
	}
	last := int64(0)
	for _, ev := range progress {
		if ev.Offset <= last || ev.Offset-last > streams.RestoreProgressRecords {
			t.Errorf("progress from offset %d to %d: want a step of 1 to %d records", last, ev.Offset, streams.RestoreProgressRecords)
		}
		last = ev.Offset
	}
	if last != end {
		t.Errorf("the last progress event is at offset %d, want the changelog's end %d", last, end)
	}
}

package monitor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestRestoreFromSnapshot: a task whose two stores were loaded from
// snapshots (one after skipping a damaged one) shows, in its Restore and
// its restore events, where the state came from: the oldest snapshot,
// the bytes and load times summed, and the skip with its reason.
func TestRestoreFromSnapshot(t *testing.T) {
	m := New(Options{})
	src := &fakeSource{}
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: "dep"}, src))
	task := streams.TaskID{Partition: 0}
	src.set([]streams.InstanceInfo{{ID: "i1", State: streams.InstanceRunning, Since: time.Now(),
		Stats: streams.Stats{State: streams.Running, Tasks: []streams.TaskStats{{ID: task, Restoring: true}}}}})
	now := time.Now()
	a := streams.RestoreEvent{InstanceID: "i1", Task: task, Store: "a", Changelog: "app-a-changelog", StartOffset: 9000, EndOffset: 10_000,
		Snapshot: &streams.SnapshotRestore{ID: "a-2", TakenAt: now.Add(-2 * time.Minute), Offset: 9000, Bytes: 39_500_000,
			Took: 113 * time.Millisecond},
		Skipped: []streams.SnapshotSkip{{ID: "a-3", Reason: "checksum differs"}}}
	b := streams.RestoreEvent{InstanceID: "i1", Task: task, Store: "b", Changelog: "app-b-changelog", StartOffset: 500, EndOffset: 1500,
		Snapshot: &streams.SnapshotRestore{ID: "b-7", TakenAt: now.Add(-time.Minute), Offset: 500, Bytes: 500_000, Took: 7 * time.Millisecond}}
	h.OnRestoreStart(a)
	h.OnRestoreStart(b)
	m.publish()

	in := findInstance(findDeployment(m.Snapshot(), "dep"), "i1")
	if in == nil || len(in.Tasks) != 1 || in.Tasks[0].Restore == nil {
		t.Fatalf("no restore on the task: %+v", in)
	}
	want := SnapshotLoad{SnapshotID: "a-2", SnapshotTakenAt: now.Add(-2 * time.Minute).UnixMilli(), SnapshotBytes: 40_000_000,
		SnapshotLoadMs: 120, SkippedSnapshots: []SkippedSnapshot{{ID: "a-3", Reason: "checksum differs"}}}
	r := in.Tasks[0].Restore
	if got := r.SnapshotLoad; got.SnapshotID != want.SnapshotID || got.SnapshotTakenAt != want.SnapshotTakenAt ||
		got.SnapshotBytes != want.SnapshotBytes || got.SnapshotLoadMs != want.SnapshotLoadMs ||
		len(got.SkippedSnapshots) != 1 || got.SkippedSnapshots[0] != want.SkippedSnapshots[0] {
		t.Errorf("the task's restore says %+v, want %+v", got, want)
	}
	if r.Total != 2000 {
		t.Errorf("the task's restore has %d records to read, want the changelogs' tails, 2000", r.Total)
	}

	a.Restored, a.Took = 1000, 50*time.Millisecond
	h.OnRestoreEnd(a)
	h.OnRestoreEnd(streams.RestoreEvent{InstanceID: "i1", Task: task, Store: "c", StartOffset: 0, EndOffset: 80, Restored: 80})
	finished := eventsOf(m.Events(0), kindRestoreFinished)
	if len(finished) != 2 {
		t.Fatalf("%d restore-finished events, want 2", len(finished))
	}
	d, _ := finished[0].Detail.(RestoreFinishedDetail)
	if d.SnapshotID != "a-2" || d.SnapshotBytes != 39_500_000 || d.SnapshotLoadMs != 113 || len(d.SkippedSnapshots) != 1 {
		t.Errorf("the restore from a snapshot finished with %+v", d)
	}
	for _, part := range []string{"from snapshot a-2 (2m0s old, 39.5 MB loaded in 113ms), then 1000 changelog records",
		"skipped snapshot a-3: checksum differs"} {
		if !strings.Contains(finished[0].Message, part) {
			t.Errorf("message %q, want it to say %q", finished[0].Message, part)
		}
	}
	if msg := finished[1].Message; strings.Contains(msg, "snapshot") || !strings.Contains(msg, ": 80 changelog records") {
		t.Errorf("a restore from the changelog says %q", msg)
	}
}

// TestSnapshotTakenEvents: a snapshot taken and one failed are each a
// snapshot-taken event, with the size and duration, or the error.
func TestSnapshotTakenEvents(t *testing.T) {
	m := New(Options{})
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: "dep"}, &fakeSource{}))
	task := streams.TaskID{Subtopology: 1}
	h.OnSnapshotTaken(streams.SnapshotEvent{InstanceID: "i1", Task: task, Store: "counts", ID: "s-4", ChangelogOffset: 700,
		Bytes: 2_500_000, Files: 5, Took: 90 * time.Millisecond, Pruned: []string{"s-1"}})
	h.OnSnapshotTaken(streams.SnapshotEvent{InstanceID: "i1", Task: task, Store: "counts", Err: errors.New("uploading: disk full")})
	evs := eventsOf(m.Events(0), kindSnapshotTaken)
	if len(evs) != 2 {
		t.Fatalf("%d snapshot-taken events, want 2", len(evs))
	}
	want := SnapshotTakenDetail{Store: "counts", SnapshotID: "s-4", ChangelogOffset: 700, SnapshotBytes: 2_500_000, SnapshotFiles: 5,
		DurationMs: 90}
	if d, _ := evs[0].Detail.(SnapshotTakenDetail); d.SnapshotID != want.SnapshotID || d.SnapshotBytes != want.SnapshotBytes ||
		d.DurationMs != want.DurationMs || d.SnapshotFiles != want.SnapshotFiles || d.Error != "" || evs[0].Task != "1_0" {
		t.Errorf("snapshot taken: %+v on task %s, want %+v on 1_0", d, evs[0].Task, want)
	}
	if !strings.Contains(evs[0].Message, "2.5 MB in 5 file(s) up to changelog offset 700, in 90ms") {
		t.Errorf("message %q", evs[0].Message)
	}
	if d, _ := evs[1].Detail.(SnapshotTakenDetail); d.Error != "uploading: disk full" || !strings.Contains(evs[1].Message, "failed") {
		t.Errorf("a failed snapshot: %+v, %q", d, evs[1].Message)
	}
}

// TestTimelineRestoreFromSnapshot: a moved task whose store was loaded
// from a snapshot says so on its lane's restoring phase.
func TestTimelineRestoreFromSnapshot(t *testing.T) {
	started := evRestore(1200, kindRestoreStarted, "b", "0_0", 0, 0, 0)
	started.Detail = RestoreStartedDetail{Store: "counts", SnapshotLoad: SnapshotLoad{SnapshotID: "s-3", SnapshotTakenAt: 200,
		SnapshotBytes: 39_500_000, SnapshotLoadMs: 113}}
	events := append(start("0_0@a", "0_1@b"),
		evInstance(1000, "crashed", "a"),
		evRebalance(1100, 1300, "b"),
		evAssigned(1200, "b", "0_0", ""),
		started,
		evRestore(1400, kindRestoreProgress, "b", "0_0", 300, 1500, 0))
	got := BuildTimelines(events, 3000, 1500)
	if len(got) != 1 {
		t.Fatalf("%d timelines, want 1", len(got))
	}
	var details []string
	for _, l := range got[0].Tasks {
		for _, p := range l.Phases {
			if p.Kind == PhaseRestoring {
				details = append(details, p.Detail)
			}
		}
	}
	want := "restoring on b from snapshot s-3 (1s old, 39.5 MB loaded in 113ms), then the changelog"
	if len(details) != 1 || details[0] != want {
		t.Errorf("restoring phases %q, want one: %q", details, want)
	}
}

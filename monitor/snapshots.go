package monitor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// Store snapshots (streams.Config.Snapshots) as the monitor shows them:
// where a restore's state came from, in the restore events and a task's
// Restore, and each snapshot taken, as a snapshot-taken event and in the
// metrics.

// snapshotStat is what the metrics say of one store's snapshots on an
// instance: how many were taken and failed, and the last one's size and
// time.
type snapshotStat struct {
	taken, failed int64
	lastBytes     int64
	lastAt        time.Time
}

// restoreSource counts a store's restores by where their state came
// from: "snapshot" or "changelog".
type restoreSource struct {
	storeKey
	source string
}

// loadOf is what a restore event says of snapshots, as details carry it.
func loadOf(ev streams.RestoreEvent) SnapshotLoad {
	var l SnapshotLoad
	if s := ev.Snapshot; s != nil {
		l = SnapshotLoad{SnapshotID: s.ID, SnapshotTakenAt: s.TakenAt.UnixMilli(), SnapshotBytes: s.Bytes,
			SnapshotLoadMs: s.Took.Milliseconds()}
	}
	for _, sk := range ev.Skipped {
		l.SkippedSnapshots = append(l.SkippedSnapshots, SkippedSnapshot{ID: sk.ID, Reason: sk.Reason})
	}
	return l
}

// plus adds another store's load to a task's: the oldest snapshot's id
// and time, bytes and load times summed, every skip.
func (l SnapshotLoad) plus(o SnapshotLoad) SnapshotLoad {
	if o.SnapshotID != "" {
		if l.SnapshotID == "" || o.SnapshotTakenAt < l.SnapshotTakenAt {
			l.SnapshotID, l.SnapshotTakenAt = o.SnapshotID, o.SnapshotTakenAt
		}
		l.SnapshotBytes += o.SnapshotBytes
		l.SnapshotLoadMs += o.SnapshotLoadMs
	}
	l.SkippedSnapshots = append(l.SkippedSnapshots, o.SkippedSnapshots...)
	return l
}

// loads sums the snapshot loads of a task's restores in progress, store
// by store in name order, so that the skipped ones keep their order.
func loads(restores map[string]*restoreState) SnapshotLoad {
	var l SnapshotLoad
	for _, store := range slices.Sorted(maps.Keys(restores)) {
		l = l.plus(restores[store].load)
	}
	return l
}

// source is where the state came from, as the restore metric labels it.
func (l SnapshotLoad) source() string {
	if l.SnapshotID != "" {
		return "snapshot"
	}
	return "changelog"
}

// describe says, for a restore event's message, where the state came
// from before the changelog at now: "from snapshot s (2m0s old, 96.0 MB
// loaded in 1.2s), then " or "", and the snapshots skipped.
func (l SnapshotLoad) describe(now time.Time) (from, skipped string) {
	if l.SnapshotID != "" {
		age := now.Sub(time.UnixMilli(l.SnapshotTakenAt)).Round(time.Second)
		from = fmt.Sprintf("from snapshot %s (%v old, %s loaded in %v), then ", l.SnapshotID, age, byteSize(l.SnapshotBytes),
			(time.Duration(l.SnapshotLoadMs) * time.Millisecond))
	}
	parts := make([]string, len(l.SkippedSnapshots))
	for i, s := range l.SkippedSnapshots {
		parts[i] = fmt.Sprintf("skipped snapshot %s: %s", s.ID, s.Reason)
	}
	if len(parts) > 0 {
		skipped = "; " + strings.Join(parts, "; ")
	}
	return from, skipped
}

// byteSize shows a size in bytes in decimal units, as the live page does
// (static/live/format.js bytes).
func byteSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// OnSnapshotTaken logs a snapshot-taken event and counts the snapshot
// for the metrics.
func (h *hook) OnSnapshotTaken(ev streams.SnapshotEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	now := time.Now()
	h.d.noteSnapshot(ev, now)
	d := SnapshotTakenDetail{Store: ev.Store, SnapshotID: ev.ID, ChangelogOffset: ev.ChangelogOffset, StreamTime: ev.StreamTime,
		SnapshotBytes: ev.Bytes, SnapshotFiles: ev.Files, DurationMs: ev.Took.Milliseconds(), Pruned: ev.Pruned}
	msg := fmt.Sprintf("snapshot %s of %s of task %s on %s: %s in %d file(s) up to changelog offset %d, in %v",
		ev.ID, ev.Store, ev.Task, ev.InstanceID, byteSize(ev.Bytes), ev.Files, ev.ChangelogOffset, ev.Took.Round(time.Millisecond))
	if ev.Err != nil {
		d.Error = ev.Err.Error()
		msg = fmt.Sprintf("snapshot of %s of task %s on %s failed: %v", ev.Store, ev.Task, ev.InstanceID, ev.Err)
	}
	h.emit(now, ev.InstanceID, ev.Task, kindSnapshotTaken, msg, d)
}

// noteSnapshot counts a snapshot of a store for the metrics. The caller
// holds the Monitor's mu.
func (d *deployment) noteSnapshot(ev streams.SnapshotEvent, now time.Time) {
	k := storeKey{instance: ev.InstanceID, task: ev.Task, store: ev.Store}
	s := d.snapshots[k]
	if s == nil {
		s = &snapshotStat{}
		d.snapshots[k] = s
	}
	if ev.Err != nil {
		s.failed++
		return
	}
	s.taken++
	s.lastBytes, s.lastAt = ev.Bytes, now
}

// noteRestoreSource counts a finished restore of a store by where its
// state came from. The caller holds the Monitor's mu.
func (d *deployment) noteRestoreSource(ev streams.RestoreEvent, l SnapshotLoad) {
	d.restoreSources[restoreSource{storeKey{instance: ev.InstanceID, task: ev.Task, store: ev.Store}, l.source()}]++
}

// snapshotMetrics adds the snapshot and restore-source series through
// add (deployment.metrics's).
func (d *deployment) snapshotMetrics(add func(f int, v float64, values ...string)) {
	for k, s := range d.snapshots {
		task := k.task.String()
		add(mSnapshots, float64(s.taken), k.instance, task, k.store)
		add(mSnapshotsFailed, float64(s.failed), k.instance, task, k.store)
		if !s.lastAt.IsZero() {
			add(mSnapshotBytes, float64(s.lastBytes), k.instance, task, k.store)
			add(mSnapshotTime, float64(s.lastAt.UnixMilli()), k.instance, task, k.store)
		}
	}
	for k, n := range d.restoreSources {
		add(mRestores, float64(n), k.instance, k.task.String(), k.store, k.source)
	}
}

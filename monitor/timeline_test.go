package monitor

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// Events as the hooks and InstanceEvent log them, for the timeline
// tests: times are unix ms from 0.

func evAssigned(t int64, instance, task, replica string) Event {
	return Event{Time: t, Kind: kindTaskAssigned, Instance: instance, Task: task, Detail: TaskAssignedDetail{FromReplica: replica}}
}

func evRevoked(t int64, instance, task string, lastRecord int64) Event {
	return Event{Time: t, Kind: kindTaskRevoked, Instance: instance, Task: task, Detail: TaskRevokedDetail{Clean: true, LastRecordAt: lastRecord}}
}

func evInstance(t int64, kind, instance string) Event {
	return Event{Time: t, Kind: "instance-" + kind, Instance: instance}
}

func evRebalance(start, end int64, instance string) Event {
	return Event{Time: end, Kind: kindRebalance, Instance: instance, Detail: RebalanceDetail{DurationMs: end - start}}
}

// evRebalanceKept is a rebalance that suspended tasks and gave them back,
// as an eager one does with the tasks that stay.
func evRebalanceKept(start, end int64, instance string, kept ...string) Event {
	return Event{Time: end, Kind: kindRebalance, Instance: instance, Detail: RebalanceDetail{DurationMs: end - start, Kept: kept}}
}

func evRestore(t int64, kind, instance, task string, restored int64, rate float64, took int64) Event {
	ev := Event{Time: t, Kind: kind, Instance: instance, Task: task}
	switch kind {
	case kindRestoreStarted:
		ev.Detail = RestoreStartedDetail{Store: "counts"}
	case kindRestoreProgress:
		ev.Detail = RestoreProgressDetail{Store: "counts", Restored: restored, Rate: rate}
	case kindRestoreFinished:
		ev.Detail = RestoreFinishedDetail{Store: "counts", Restored: restored, Rate: rate, DurationMs: took}
	}
	return ev
}

func evPromoted(t int64, instance, task string, lag int64) Event {
	return Event{Time: t, Kind: kindStandbyPromoted, Instance: instance, Task: task, Detail: StandbyPromotedDetail{Lag: lag}}
}

func evResumed(t int64, instance, task string, assignedAt, restored int64, replica string) Event {
	return Event{Time: t, Kind: kindTaskResumed, Instance: instance, Task: task,
		Detail: TaskResumedDetail{AssignedAt: assignedAt, FirstRecordAt: t, Restored: restored, FromReplica: replica}}
}

// evFailedOver is a task-failed-over event as OnTaskFailedOver writes it,
// its numbers computed from the times as the runtime does.
func evFailedOver(task, from, to, cause, replica string, failedAt, lastRecord, assignedAt, resumedAt, restored, standbyLag int64) Event {
	d := TaskFailedOverDetail{From: from, To: to, Cause: cause, FromReplica: replica, DetectionMs: assignedAt - failedAt,
		DetectedBy: "supervisor", RecoveryMs: resumedAt - assignedAt, DowntimeMs: resumedAt - lastRecord, Restored: restored,
		ResumedAt: resumedAt, FailedAt: failedAt, LastRecordAt: lastRecord, AssignedAt: assignedAt}
	if standbyLag >= 0 {
		d.StandbyLag = &standbyLag
	}
	return Event{Time: resumedAt + 1, Kind: kindTaskFailedOver, Instance: to, Task: task, Detail: d}
}

// phases writes a lane's phases as "kind start-end" joined by spaces.
func phases(ps []Phase) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s %d-%d", p.Kind, p.Start, p.End)
	}
	return b.String()
}

// laneLine writes a task lane: its move, numbers and phases.
func laneLine(l TaskLane) string {
	return fmt.Sprintf("%s %s>%s %q lag=%d restored=%d det=%d rec=%d down=%d: %s", l.Task, l.From, l.To, l.Replica,
		l.StandbyLag, l.Restored, l.DetectionMs, l.RecoveryMs, l.DowntimeMs, phases(l.Phases))
}

// timelineLines writes a timeline as lines: a head, a line per task lane,
// the unmoved tasks and a line per instance.
func timelineLines(f FailoverTimeline) []string {
	lines := []string{fmt.Sprintf("%s %s at=%d end=%d done=%v", f.Cause, f.Instance, f.At, f.End, f.Done)}
	for _, l := range f.Tasks {
		lines = append(lines, laneLine(l))
	}
	lines = append(lines, "unmoved "+strings.Join(f.Unmoved, ","))
	if len(f.Pauses) > 0 {
		var ps []string
		for _, p := range f.Pauses {
			ps = append(ps, fmt.Sprintf("%s@%s %d-%d", p.Task, p.Instance, p.Start, p.End))
		}
		lines = append(lines, "pauses "+strings.Join(ps, " "))
	}
	for _, in := range f.Instances {
		lines = append(lines, in.Instance+": "+phases(in.Phases))
	}
	return lines
}

// start assigns tasks to instances at time 0 ("0_0@a").
func start(placements ...string) []Event {
	var evs []Event
	for _, p := range placements {
		task, in, _ := strings.Cut(p, "@")
		evs = append(evs, evAssigned(0, in, task, ""))
	}
	return evs
}

func TestBuildTimelines(t *testing.T) {
	cases := []struct {
		name   string
		events []Event
		now    int64
		want   [][]string
	}{{
		name: "eager: the tasks that stay pause for the rebalance",
		events: append(start("0_0@a", "0_1@b", "0_2@b", "0_3@c"),
			// A rebalance long before, which the timeline does not show.
			evRebalanceKept(-5000, -4900, "b", "0_1", "0_2"),
			evInstance(1000, "crashed", "a"),
			evRebalanceKept(1100, 1300, "b", "0_1", "0_2"),
			evAssigned(1300, "b", "0_0", "standby"),
			evRebalanceKept(1150, 1280, "c", "0_3"),
			evResumed(1400, "b", "0_0", 1300, 0, "standby"),
			evFailedOver("0_0", "a", "b", "crash", "standby", 1000, 990, 1300, 1400, 0, 0),
		),
		now: 5000,
		want: [][]string{{
			"crash a at=1000 end=1400 done=true",
			`0_0 a>b "standby" lag=0 restored=0 det=300 rec=100 down=410: processing 0-1000 detecting 1000-1100 rebalancing 1100-1300 promoting 1300-1400 processing 1400-1400`,
			"unmoved 0_1,0_2,0_3",
			"pauses 0_1@b 1100-1300 0_2@b 1100-1300 0_3@c 1150-1280",
			"a: processing 0-1000 paused 1000-1400",
			"b: processing 0-1100 rebalancing 1100-1300 processing 1300-1400",
			"c: processing 0-1150 rebalancing 1150-1280 processing 1280-1400",
		}},
	}, {
		name: "crash onto a standby",
		events: append(start("0_0@a", "0_1@b"),
			evInstance(1000, "crashed", "a"),
			evAssigned(1250, "b", "0_0", "standby"),
			evPromoted(1250, "b", "0_0", 5),
			evRebalance(1100, 1300, "b"),
			evResumed(1400, "b", "0_0", 1250, 5, "standby"),
			evFailedOver("0_0", "a", "b", "crash", "standby", 1002, 990, 1250, 1400, 5, 5),
		),
		now: 5000,
		want: [][]string{{
			"crash a at=1000 end=1400 done=true",
			`0_0 a>b "standby" lag=5 restored=5 det=248 rec=150 down=410: processing 0-1002 detecting 1002-1100 rebalancing 1100-1250 promoting 1250-1400 processing 1400-1400`,
			"unmoved 0_1",
			"a: processing 0-1000 paused 1000-1400",
			"b: processing 0-1100 rebalancing 1100-1300 processing 1300-1400",
		}},
	}, {
		name: "crash, restoring while the failover goes on",
		events: append(start("0_0@a", "0_1@a", "0_2@b"),
			evInstance(1000, "crashed", "a"),
			evRebalance(1100, 1300, "b"),
			evAssigned(1200, "b", "0_0", ""),
			evRestore(1200, kindRestoreStarted, "b", "0_0", 0, 0, 0),
			evAssigned(1200, "b", "0_1", ""),
			evResumed(1350, "b", "0_1", 1200, 0, ""),
			evFailedOver("0_1", "a", "b", "crash", "", 1000, 900, 1200, 1350, 0, -1),
			evRestore(1400, kindRestoreProgress, "b", "0_0", 300, 1500, 0),
		),
		now: 1500,
		want: [][]string{{
			"crash a at=1000 end=1500 done=false",
			`0_0 a>b "" lag=-1 restored=300 det=-1 rec=-1 down=-1: processing 0-1000 detecting 1000-1100 rebalancing 1100-1200 restoring 1200-1500`,
			`0_1 a>b "" lag=-1 restored=0 det=200 rec=150 down=450: processing 0-1000 detecting 1000-1100 rebalancing 1100-1200 restoring 1200-1350 processing 1350-1500`,
			"unmoved 0_2",
			"a: processing 0-1000 paused 1000-1500",
			"b: processing 0-1100 rebalancing 1100-1300 processing 1300-1500",
		}},
	}, {
		name: "a second crash while the first failover restores",
		events: append(start("0_0@a", "0_1@b", "0_2@c"),
			evInstance(1000, "crashed", "a"),
			evAssigned(1200, "b", "0_0", ""),
			evRestore(1200, kindRestoreStarted, "b", "0_0", 0, 0, 0),
			evRebalance(1100, 1250, "b"),
			evRebalance(1100, 1250, "c"),
			evInstance(1500, "crashed", "b"),
			evRebalance(1600, 1800, "c"),
			evAssigned(1800, "c", "0_0", ""),
			evAssigned(1800, "c", "0_1", "standby"),
			evRestore(2000, kindRestoreFinished, "c", "0_0", 400, 2000, 200),
			evResumed(2000, "c", "0_0", 1800, 400, ""),
			evFailedOver("0_0", "b", "c", "crash", "", 1500, 1000, 1800, 2000, 400, -1),
			evResumed(1900, "c", "0_1", 1800, 0, "standby"),
			evFailedOver("0_1", "b", "c", "crash", "standby", 1500, 1490, 1800, 1900, 0, 0),
		),
		now: 9000,
		want: [][]string{{
			"crash a at=1000 end=1500 done=true",
			`0_0 a>b "" lag=-1 restored=0 det=-1 rec=-1 down=-1: processing 0-1000 detecting 1000-1100 rebalancing 1100-1200 restoring 1200-1500`,
			"unmoved 0_1,0_2",
			"a: processing 0-1000 paused 1000-1500",
			"b: processing 0-1100 rebalancing 1100-1250 processing 1250-1500 paused 1500-1500",
			"c: processing 0-1100 rebalancing 1100-1250 processing 1250-1500",
		}, {
			"crash b at=1500 end=2000 done=true",
			`0_0 b>c "" lag=-1 restored=400 det=300 rec=200 down=1000: processing 500-1500 detecting 1500-1600 rebalancing 1600-1800 restoring 1800-2000 processing 2000-2000`,
			`0_1 b>c "standby" lag=0 restored=0 det=300 rec=100 down=410: processing 500-1500 detecting 1500-1600 rebalancing 1600-1800 promoting 1800-1900 processing 1900-2000`,
			"unmoved 0_2",
			"b: processing 500-1100 rebalancing 1100-1250 processing 1250-1500 paused 1500-2000",
			"c: processing 500-1100 rebalancing 1100-1250 processing 1250-1600 rebalancing 1600-1800 processing 1800-2000",
		}},
	}, {
		name: "a restore interrupted by another rebalance",
		events: append(start("0_0@a", "0_1@b"),
			evInstance(1000, "crashed", "a"),
			evRebalance(1100, 1250, "b"),
			evAssigned(1200, "b", "0_0", ""),
			evRestore(1200, kindRestoreStarted, "b", "0_0", 0, 0, 0),
			evInstance(1300, "added", "d"),
			evRevoked(1400, "b", "0_0", 0),
			evRebalance(1350, 1450, "b"),
			evAssigned(1600, "d", "0_0", ""),
			evRebalance(1300, 1650, "d"),
			evRestore(1900, kindRestoreFinished, "d", "0_0", 900, 3000, 300),
			evResumed(1900, "d", "0_0", 1600, 900, ""),
			evFailedOver("0_0", "a", "d", "crash", "", 1000, 950, 1600, 1900, 900, -1),
		),
		now: 9000,
		want: [][]string{{
			"crash a at=1000 end=1900 done=true",
			`0_0 a>d "" lag=-1 restored=900 det=600 rec=300 down=950: processing 0-1000 detecting 1000-1100 rebalancing 1100-1200 restoring 1200-1400 rebalancing 1400-1600 restoring 1600-1900 processing 1900-1900`,
			"unmoved 0_1",
			"a: processing 0-1000 paused 1000-1900",
			"b: processing 0-1100 rebalancing 1100-1250 processing 1250-1350 rebalancing 1350-1450 processing 1450-1900",
			"d: processing 0-1300 rebalancing 1300-1650 processing 1650-1900",
		}, {
			// 0_0 moved to d, but in the crash's failover, whose restore
			// the add interrupted.
			"instance-added d at=1300 end=1650 done=true",
			"unmoved 0_1",
			"b: processing 300-1100 rebalancing 1100-1250 processing 1250-1350 rebalancing 1350-1450 processing 1450-1650",
			"d: rebalancing 1300-1650 processing 1650-1650",
		}},
	}, {
		name: "a crash at start-up, told before the dying instance's last assignment, waits for the group",
		events: []Event{
			evAssigned(527, "c", "1_2", ""),
			evInstance(530, "crashed", "a"),
			evAssigned(537, "b", "1_1", ""),
			evAssigned(543, "a", "1_0", ""),
		},
		now: 600,
		want: [][]string{{
			"crash a at=530 end=600 done=false",
			"unmoved 1_2",
			"a: processing -470-530 paused 530-600",
			"b: processing -470-600",
			"c: processing -470-600",
		}},
	}, {
		name: "a crash at start-up, told before the dying instance's last assignment",
		events: []Event{
			evAssigned(527, "c", "1_2", ""),
			evInstance(530, "crashed", "a"),
			evAssigned(537, "b", "1_1", ""),
			evAssigned(543, "a", "1_0", ""),
			evRebalance(473, 543, "a"),
			evRebalance(761, 776, "c"),
			evAssigned(777, "c", "1_0", "standby"),
			evResumed(785, "c", "1_0", 776, 0, "standby"),
			evFailedOver("1_0", "a", "c", "crash", "standby", 531, 500, 776, 785, 0, 0),
		},
		now: 9000,
		want: [][]string{{
			"crash a at=530 end=785 done=true",
			`1_0 a>c "standby" lag=0 restored=0 det=245 rec=9 down=285: processing -470-531 detecting 531-761 rebalancing 761-776 promoting 776-785 processing 785-785`,
			"unmoved 1_2",
			"a: processing -470-473 rebalancing 473-530 paused 530-785",
			"b: processing -470-785",
			"c: processing -470-761 rebalancing 761-776 processing 776-785",
		}},
	}, {
		name: "a graceful stop, told once the instance stopped",
		events: append(start("0_0@a", "0_1@b"),
			evRevoked(1050, "a", "0_0", 1040),
			evRebalance(1060, 1210, "b"),
			evAssigned(1200, "b", "0_0", "standby"),
			evResumed(1300, "b", "0_0", 1200, 0, "standby"),
			evFailedOver("0_0", "a", "b", "stop", "standby", 1000, 1040, 1200, 1300, 0, 2),
			evInstance(1320, "stopped", "a"),
		),
		now: 9000,
		want: [][]string{{
			"stop a at=1000 end=1300 done=true",
			`0_0 a>b "standby" lag=2 restored=0 det=200 rec=100 down=260: processing 0-1000 detecting 1000-1060 rebalancing 1060-1200 promoting 1200-1300 processing 1300-1300`,
			"unmoved 0_1",
			"a: processing 0-1000 paused 1000-1300",
			"b: processing 0-1060 rebalancing 1060-1210 processing 1210-1300",
		}},
	}, {
		name: "an added instance takes a stateless task, then a probing move hands it a warm-up's",
		events: append(start("0_0@a", "0_1@a", "0_2@a"),
			evInstance(1000, "added", "b"),
			evRevoked(1100, "a", "0_1", 1090),
			evRebalance(1050, 1150, "a"),
			evAssigned(1250, "b", "0_1", ""),
			evRebalance(1000, 1300, "b"),
			evResumed(1350, "b", "0_1", 1250, 0, ""),
			evRevoked(61_000, "a", "0_2", 60_990),
			evAssigned(61_100, "b", "0_2", "warm-up"),
			evRestore(61_150, kindRestoreFinished, "b", "0_2", 20, 400, 50),
			evResumed(61_200, "b", "0_2", 61_100, 20, "warm-up"),
		),
		now: 90_000,
		want: [][]string{{
			"instance-added b at=1000 end=1350 done=true",
			`0_1 a>b "" lag=-1 restored=0 det=0 rec=100 down=260: processing 0-1100 rebalancing 1100-1250 restoring 1250-1350 processing 1350-1350`,
			"unmoved 0_0,0_2",
			"a: processing 0-1050 rebalancing 1050-1150 processing 1150-1350",
			"b: rebalancing 1000-1300 processing 1300-1350",
		}, {
			"probing b at=61000 end=61200 done=true",
			`0_2 a>b "warm-up" lag=-1 restored=20 det=0 rec=100 down=210: processing 60000-61000 rebalancing 61000-61100 restoring 61100-61200 processing 61200-61200`,
			"unmoved 0_0,0_1",
			"a: processing 60000-61200",
			"b: processing 60000-61200",
		}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := BuildTimelines(c.events, 3000, c.now)
			if len(got) != len(c.want) {
				t.Fatalf("%d timelines, want %d:\n%s", len(got), len(c.want), dump(got))
			}
			for i, f := range got {
				if f.SessionTimeoutMs != 3000 {
					t.Errorf("timeline %d: sessionTimeoutMs %d, want 3000", i, f.SessionTimeoutMs)
				}
				lines := timelineLines(f)
				if strings.Join(lines, "\n") != strings.Join(c.want[i], "\n") {
					t.Errorf("timeline %d:\n%s\nwant\n%s", i, strings.Join(lines, "\n"), strings.Join(c.want[i], "\n"))
				}
			}
			// The events read back from the history (JSON) tell the same.
			var back []Event
			b, _ := json.Marshal(c.events)
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			for i, f := range BuildTimelines(back, 3000, c.now) {
				if i < len(got) && strings.Join(timelineLines(f), "\n") != strings.Join(timelineLines(got[i]), "\n") {
					t.Errorf("timeline %d read back from JSON:\n%s\nwant\n%s", i, strings.Join(timelineLines(f), "\n"), strings.Join(timelineLines(got[i]), "\n"))
				}
			}
		})
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestTimelineNumbersAreTheFailoverTable's drives a deployment's hooks
// through a crash and checks that the snapshot's timeline has a lane for
// the moved task whose numbers are its failover table row's, and that
// the unmoved task is listed as such.
func TestTimelineNumbersAreTheFailoverTable(t *testing.T) {
	m := New(Options{})
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: "dep", SessionTimeout: 3 * time.Second}, &fakeSource{}))
	t0 := time.Now()
	moved, kept := streams.TaskID{Partition: 0}, streams.TaskID{Partition: 1}
	h.OnTaskAssigned(streams.TaskEvent{InstanceID: "a", Task: moved})
	h.OnTaskAssigned(streams.TaskEvent{InstanceID: "b", Task: kept})
	m.InstanceEvent("dep", "a", "crashed")
	h.OnStateChange(streams.StateChange{InstanceID: "b", From: streams.Running, To: streams.Rebalancing})
	h.OnTaskAssigned(streams.TaskEvent{InstanceID: "b", Task: moved, FromReplica: "standby"})
	h.OnStateChange(streams.StateChange{InstanceID: "b", From: streams.Rebalancing, To: streams.Running, Kept: []streams.TaskID{kept}})
	assigned := time.Now()
	resumed := assigned.Add(40 * time.Millisecond)
	h.OnTaskResumed(streams.TaskResumedEvent{InstanceID: "b", Task: moved, AssignedAt: assigned, FirstRecordAt: resumed, FromReplica: "standby"})
	h.OnTaskFailedOver(streams.FailoverEvent{Task: moved, From: "a", To: "b", Cause: "crash", DetectedBy: streams.DetectedBySupervisor,
		FailedAt: t0, LastRecordAt: t0.Add(-30 * time.Millisecond), AssignedAt: assigned, ResumedAt: resumed,
		Detection: assigned.Sub(t0), Recovery: resumed.Sub(assigned), Downtime: resumed.Sub(t0.Add(-30 * time.Millisecond)),
		FromReplica: "standby", StandbyLag: 7, StandbyOffset: 100})

	d := findDeployment(m.Snapshot(), "dep")
	if len(d.Failovers) != 1 || len(d.Timelines) != 1 {
		t.Fatalf("%d failovers and %d timelines, want 1 each:\n%s", len(d.Failovers), len(d.Timelines), dump(d))
	}
	f, tl := d.Failovers[0], d.Timelines[0]
	if tl.Cause != "crash" || tl.Instance != "a" || !tl.Done || tl.SessionTimeoutMs != 3000 || len(tl.Tasks) != 1 {
		t.Fatalf("timeline %s", dump(tl))
	}
	l := tl.Tasks[0]
	if l.Task != f.Task || l.From != f.From || l.To != f.To || l.Replica != f.Replica || l.DetectionMs != f.DetectionMs ||
		l.RecoveryMs != f.RecoveryMs || l.DowntimeMs != f.DowntimeMs || l.Restored != f.Restored || l.StandbyLag != 7 {
		t.Errorf("lane %s\ndoes not match the failover table's row %s", dump(l), dump(f))
	}
	// The hooks ran within a millisecond or two: detecting and
	// rebalancing may have taken none, and a phase of no time is left out.
	if kinds := phaseKinds(l.Phases); !regexp.MustCompile(`^processing( detecting)?( rebalancing)? promoting processing$`).MatchString(kinds) {
		t.Errorf("phases %s", kinds)
	}
	if strings.Join(tl.Unmoved, ",") != kept.String() {
		t.Errorf("unmoved %v, want [%s]", tl.Unmoved, kept)
	}
	// b's rebalance suspended the task that stayed (as an eager one
	// does): its pause is the rebalance's.
	if len(tl.Pauses) != 1 || tl.Pauses[0].Task != kept.String() || tl.Pauses[0].Instance != "b" || tl.Pauses[0].End < tl.Pauses[0].Start {
		t.Errorf("pauses %s, want %s's on b", dump(tl.Pauses), kept)
	}
}

func phaseKinds(ps []Phase) string {
	kinds := make([]string, len(ps))
	for i, p := range ps {
		kinds[i] = p.Kind
	}
	return strings.Join(kinds, " ")
}

package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/streams"
	rtelemetry "github.com/braidstream/braid/runtime/telemetry"
)

// t0 is when the reports of these tests begin, long ago: a handoff whose
// owner still runs is settled as soon as it is seen.
var t0 = time.UnixMilli(1_700_000_000_000)

var task00 = streams.TaskID{}

// reportAt is a report of process at ms after t0, its instances running
// the tasks given, each instance's tasks after its id.
func reportAt(process string, started int64, seq uint64, ms int64, instances ...rtelemetry.Instance) rtelemetry.Report {
	return rtelemetry.Report{Version: rtelemetry.ReportVersion, App: "app", Process: process, Started: started, Seq: seq,
		Time: t0.Add(time.Duration(ms) * time.Millisecond).UnixMilli(), IntervalMs: 250, Instances: instances}
}

func running(id string, tasks ...streams.TaskID) rtelemetry.Instance {
	w := rtelemetry.Instance{ID: id, State: streams.InstanceRunning, Since: t0, Stats: streams.Stats{InstanceID: id, State: streams.Running}}
	for _, task := range tasks {
		w.Stats.Tasks = append(w.Stats.Tasks, streams.TaskStats{ID: task, LastRecord: t0})
	}
	return w
}

func in(state streams.InstanceState, id string, sinceMs int64) rtelemetry.Instance {
	return rtelemetry.Instance{ID: id, State: state, Since: t0.Add(time.Duration(sinceMs) * time.Millisecond)}
}

func event(t *testing.T, kind string, atMs int64, ev any) rtelemetry.Event {
	t.Helper()
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return rtelemetry.Event{Kind: kind, At: t0.Add(time.Duration(atMs) * time.Millisecond).UnixMilli(), Body: body}
}

// takeover is y1's report, in process py, of receiving task 0_0 at 5 s
// and processing its first record 100 ms later.
func takeover(t *testing.T, process string, started int64, seq uint64, instance string) rtelemetry.Report {
	rep := reportAt(process, started, seq, 5200, running(instance, task00))
	assigned := t0.Add(5 * time.Second)
	rep.Events = []rtelemetry.Event{
		event(t, rtelemetry.KindAssigned, 5000, streams.TaskEvent{ApplicationID: "app", InstanceID: instance, Task: task00, Clean: true}),
		event(t, rtelemetry.KindResumed, 5100, streams.TaskResumedEvent{ApplicationID: "app", InstanceID: instance, Task: task00,
			AssignedAt: assigned, FirstRecordAt: assigned.Add(100 * time.Millisecond)}),
	}
	return rep
}

// TestReaderMeasuresFailoversBetweenProcesses: a task that moves from an
// instance of one process to one of another is a failover when its owner
// died, stopped or crashed, with the failure at what the owner's reports
// say, and is not one when the owner still runs or when both instances
// are of one process, whose own Supervisor reports it.
func TestReaderMeasuresFailoversBetweenProcesses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reports func(t *testing.T) []rtelemetry.Report
		// want is the failover expected, nil for none.
		want *monitor.Failover
	}{
		{"owner silent since its last rtelemetry.Report", func(t *testing.T) []rtelemetry.Report {
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), takeover(t, "py", 1, 1, "y1")}
		}, &monitor.Failover{Task: "0_0", From: "x1", To: "y1", Cause: "crash", DetectedBy: "session-timeout", DetectionMs: 5000, RecoveryMs: 100, DowntimeMs: 5100}},
		{"owner stopped, its last rtelemetry.Report final", func(t *testing.T) []rtelemetry.Report {
			final := reportAt("px", 1, 2, 1000, in(streams.InstanceStopped, "x1", 900))
			final.Final = true
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), final, takeover(t, "py", 1, 1, "y1")}
		}, &monitor.Failover{Task: "0_0", From: "x1", To: "y1", Cause: "stop", DetectedBy: "leave", DetectionMs: 4100, RecoveryMs: 100, DowntimeMs: 5100}},
		{"final rtelemetry.Report after the takeover", func(t *testing.T) []rtelemetry.Report {
			final := reportAt("px", 1, 3, 5300, in(streams.InstanceStopped, "x1", 4800))
			final.Final = true
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), reportAt("px", 1, 2, 4900, running("x1", task00)),
				takeover(t, "py", 1, 1, "y1"), final}
		}, &monitor.Failover{Task: "0_0", From: "x1", To: "y1", Cause: "stop", DetectedBy: "leave", DetectionMs: 200, RecoveryMs: 100, DowntimeMs: 5100}},
		{"owner crashed under its process's Supervisor", func(t *testing.T) []rtelemetry.Report {
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), reportAt("px", 1, 2, 4900, in(streams.InstanceCrashed, "x1", 4500)),
				takeover(t, "py", 1, 1, "y1")}
		}, &monitor.Failover{Task: "0_0", From: "x1", To: "y1", Cause: "crash", DetectedBy: "supervisor", DetectionMs: 500, RecoveryMs: 100, DowntimeMs: 5100}},
		{"owner's process restarted", func(t *testing.T) []rtelemetry.Report {
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), reportAt("px", 2, 1, 3000, running("x1")),
				takeover(t, "py", 1, 1, "y1")}
		}, &monitor.Failover{Task: "0_0", From: "x1", To: "y1", Cause: "crash", DetectedBy: "session-timeout", DetectionMs: 5000, RecoveryMs: 100, DowntimeMs: 5100}},
		{"assigned again before it resumed", func(t *testing.T) []rtelemetry.Report {
			first := takeover(t, "py", 1, 1, "y1")
			resumed := first.Events[1]
			first.Events = first.Events[:1]
			again := takeover(t, "py", 1, 2, "y1")
			again.Events = []rtelemetry.Event{again.Events[0], resumed}
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), first, again}
		}, &monitor.Failover{Task: "0_0", From: "x1", To: "y1", Cause: "crash", DetectedBy: "session-timeout", DetectionMs: 5000, RecoveryMs: 100, DowntimeMs: 5100}},
		{"owner's process restarted after the task moved", func(t *testing.T) []rtelemetry.Report {
			// A rebalance between live instances, then the owner's
			// process died: the move was not its failover.
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), reportAt("px", 1, 2, 4900, running("x1", task00)),
				takeover(t, "py", 1, 1, "y1"), reportAt("px", 1, 3, 6000, running("x1")), reportAt("px", 2, 1, 7000, running("x1"))}
		}, nil},
		{"owner's process died just after the task moved", func(t *testing.T) []rtelemetry.Report {
			// Its last report, 300 ms after the move (within two
			// intervals), shows it alive then: the e2e test saw this
			// move as a failover with a detection of -420 ms.
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), reportAt("px", 1, 2, 4900, running("x1", task00)),
				takeover(t, "py", 1, 1, "y1"), reportAt("px", 1, 3, 5300, running("x1")), reportAt("px", 2, 1, 7000, running("x1"))}
		}, nil},
		{"owner still runs", func(t *testing.T) []rtelemetry.Report {
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00)), reportAt("px", 1, 2, 4900, running("x1")),
				takeover(t, "py", 1, 1, "y1")}
		}, nil},
		{"both instances in one process", func(t *testing.T) []rtelemetry.Report {
			return []rtelemetry.Report{reportAt("px", 1, 1, 0, running("x1", task00), running("x2")), takeover(t, "px", 1, 2, "x2")}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := monitor.New(monitor.Options{})
			reports := tc.reports(t)
			app := newRemoteApp(reports[0], ReaderConfig{Monitor: m}.withDefaults(), nil)
			for _, rep := range reports {
				app.apply(rep, ReaderConfig{}.withDefaults().Logger)
			}
			var got []monitor.Failover
			for _, d := range m.Snapshot().Deployments {
				if d.ID == "app" {
					got = d.Failovers
				}
			}
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("failovers %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("failovers %+v, want one", got)
			}
			f := got[0]
			f.At, f.Replica, f.Restored = 0, "", 0
			// The reports carry no failure settings: the monitor projects
			// nothing for an application that runs elsewhere.
			want := *tc.want
			want.ProjectedDowntimeMs = -1
			if f != want {
				t.Errorf("failover\n  %+v\nwant\n  %+v", f, want)
			}
		})
	}
}

// TestReaderShowsSilentProcessesGone: a process that sent no report for
// GoneAfter has its running instances shown crashed since its last
// report, with nothing assigned; one that said goodbye (a final report)
// is shown as it said; after ForgetAfter the application is removed.
func TestReaderShowsSilentProcessesGone(t *testing.T) {
	m := monitor.New(monitor.Options{})
	cfg := ReaderConfig{Monitor: m, GoneAfter: time.Second, ForgetAfter: time.Minute}.withDefaults()
	now := time.Now()
	at := func(ago time.Duration) int64 { return now.Add(-ago).UnixMilli() }
	quiet := rtelemetry.Report{Version: rtelemetry.ReportVersion, App: "app", Process: "px", Started: 1, Seq: 1, Time: at(5 * time.Second), IntervalMs: 250,
		Instances: []rtelemetry.Instance{running("x1", task00)}}
	final := rtelemetry.Report{Version: rtelemetry.ReportVersion, App: "app", Process: "py", Started: 1, Seq: 1, Time: at(5 * time.Second), IntervalMs: 250,
		Final: true, Instances: []rtelemetry.Instance{in(streams.InstanceStopped, "y1", 0)}}
	live := rtelemetry.Report{Version: rtelemetry.ReportVersion, App: "app", Process: "pz", Started: 1, Seq: 1, Time: at(0), IntervalMs: 250,
		Instances: []rtelemetry.Instance{running("z1")}}
	app := newRemoteApp(quiet, cfg, nil)
	for _, rep := range []rtelemetry.Report{quiet, final, live} {
		app.apply(rep, cfg.Logger)
	}
	if app.expire(now) {
		t.Fatal("the application was removed while its processes are within ForgetAfter")
	}
	got := map[string]streams.InstanceInfo{}
	for _, info := range app.src.Instances() {
		got[info.ID] = info
	}
	if x := got["x1"]; x.State != streams.InstanceCrashed || len(x.Stats.Tasks) != 0 || x.Err == nil ||
		!strings.Contains(x.Err.Error(), "no report since") || !x.Since.Equal(time.UnixMilli(quiet.Time)) {
		t.Errorf("silent x1 shown as %+v; want crashed since its last rtelemetry.Report, no tasks, saying why", x)
	}
	if y := got["y1"]; y.State != streams.InstanceStopped {
		t.Errorf("y1, whose process said goodbye, shown as %v, want stopped", y.State)
	}
	if z := got["z1"]; z.State != streams.InstanceRunning {
		t.Errorf("z1, reporting, shown as %v, want running", z.State)
	}
	if !app.expire(now.Add(2 * time.Minute)) {
		t.Error("the application was kept with every process silent for over ForgetAfter")
	}
}

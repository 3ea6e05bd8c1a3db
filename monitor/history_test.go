package monitor

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// syncBuffer is a log's buffer read while the History writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func openHistory(t *testing.T, dir string, opts HistoryOptions) *History {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	h, err := OpenHistory(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func runningInstance(id string, tasks ...streams.TaskID) streams.InstanceInfo {
	info := streams.InstanceInfo{ID: id, State: streams.InstanceRunning, Since: time.Now(), Stats: streams.Stats{InstanceID: id, State: streams.Running}}
	for _, task := range tasks {
		info.Stats.Tasks = append(info.Stats.Tasks, streams.TaskStats{ID: task, StreamTime: -1})
	}
	return info
}

// crashAndFailOver drives dep's hooks through a's crash: its task moves to
// b, onto b's standby.
func crashAndFailOver(m *Monitor, h allHooks, task streams.TaskID) {
	t0 := time.Now()
	m.InstanceEvent("dep", "a", "crashed")
	h.OnStateChange(streams.StateChange{InstanceID: "b", From: streams.Running, To: streams.Rebalancing})
	h.OnTaskAssigned(streams.TaskEvent{InstanceID: "b", Task: task, FromReplica: "standby"})
	h.OnStateChange(streams.StateChange{InstanceID: "b", From: streams.Rebalancing, To: streams.Running})
	assigned := time.Now()
	resumed := assigned.Add(40 * time.Millisecond)
	h.OnTaskResumed(streams.TaskResumedEvent{InstanceID: "b", Task: task, AssignedAt: assigned, FirstRecordAt: resumed, FromReplica: "standby"})
	h.OnTaskFailedOver(streams.FailoverEvent{Task: task, From: "a", To: "b", Cause: "crash", DetectedBy: streams.DetectedBySupervisor,
		FailedAt: t0, LastRecordAt: t0.Add(-30 * time.Millisecond), AssignedAt: assigned, ResumedAt: resumed,
		Detection: assigned.Sub(t0), Recovery: resumed.Sub(assigned), Downtime: resumed.Sub(t0.Add(-30 * time.Millisecond)),
		FromReplica: "standby", StandbyLag: 7, StandbyOffset: 100})
}

// TestHistoryReloadsAFailover records a deployment's snapshot before a
// crash and the crash's events, then opens the directory again in a new
// Monitor, as a restarted server does: the event log, the failover table
// and the timeline are back once the deployment is added again, and the
// snapshot before the crash replays with the task on the crashed
// instance.
func TestHistoryReloadsAFailover(t *testing.T) {
	dir := t.TempDir()
	task := streams.TaskID{Partition: 0}
	src := &fakeSource{}
	src.set([]streams.InstanceInfo{runningInstance("a", task), runningInstance("b")})

	hist := openHistory(t, dir, HistoryOptions{SnapshotEvery: time.Millisecond})
	m := New(Options{History: hist})
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: "dep", SessionTimeout: 3 * time.Second}, src))
	h.OnTaskAssigned(streams.TaskEvent{InstanceID: "a", Task: task})
	m.persist(m.publish())
	before := hist.span("dep")
	if len(before.Instants) != 1 {
		t.Fatalf("span after one publish: %+v, want one instant", before)
	}
	crashAndFailOver(m, h, task)
	src.set([]streams.InstanceInfo{{ID: "a", State: streams.InstanceCrashed}, runningInstance("b", task)})
	// One snapshot is recorded per SnapshotEvery of the snapshots' clock.
	waitFor(t, 5*time.Second, "a second snapshot recorded", func() bool {
		m.persist(m.publish())
		return len(hist.span("dep").Instants) == 2
	})
	want := findDeployment(m.Snapshot(), "dep")
	if len(want.Failovers) != 1 || len(want.Timelines) != 1 {
		t.Fatalf("before the restart: %d failovers, %d timelines, want 1 each", len(want.Failovers), len(want.Timelines))
	}
	lastSeq := m.Events(0)[len(m.Events(0))-1].Seq
	if err := hist.Close(); err != nil {
		t.Fatal(err)
	}

	hist2 := openHistory(t, dir, HistoryOptions{})
	m2 := New(Options{History: hist2})
	if got := eventsOf(m2.Events(0), kindTaskFailedOver); len(got) != 1 || got[0].Task != task.String() {
		t.Fatalf("event log after the restart: %d task-failed-over events, want 1", len(got))
	}
	if tls, ok := m2.Timelines("dep"); ok {
		t.Fatalf("timelines of a deployment not added yet: %v", tls)
	}
	m2.AddDeployment(DeploymentInfo{ID: "dep", SessionTimeout: 3 * time.Second}, &fakeSource{})
	got := findDeployment(m2.Snapshot(), "dep")
	if !slices.Equal(got.Failovers, want.Failovers) {
		t.Errorf("failovers after the restart:\n%s\nwant\n%s", dump(got.Failovers), dump(want.Failovers))
	}
	tls, _ := m2.Timelines("dep")
	if len(tls) != 1 || dump(tls[0].Tasks) != dump(want.Timelines[0].Tasks) {
		t.Errorf("timelines after the restart:\n%s\nwant the lanes of\n%s", dump(tls), dump(want.Timelines))
	}
	// The numbering goes on from the recorded events.
	if evs := m2.Events(0); evs[len(evs)-1].Kind != kindDeploymentAdded || evs[len(evs)-1].Seq != lastSeq+1 {
		t.Errorf("the event after the restart: %+v, want deployment-added numbered %d", evs[len(evs)-1], lastSeq+1)
	}

	span := m2.History("dep")
	if len(span.Instants) != 2 || span.From != before.To {
		t.Fatalf("span after the restart: %+v, want 2 instants from %d", span, before.To)
	}
	r, err := m2.SnapshotAt("dep", span.From)
	if err != nil {
		t.Fatal(err)
	}
	if a := findInstance(&r.Deployment, "a"); a == nil || a.State != "running" || len(a.Tasks) != 1 || a.Tasks[0].ID != task.String() {
		t.Errorf("replayed a before the crash: %s", dump(a))
	}
	if len(r.Deployment.Failovers) != 0 || len(r.Deployment.Timelines) != 0 {
		t.Errorf("replayed before the crash: %d failovers, %d timelines, want none", len(r.Deployment.Failovers), len(r.Deployment.Timelines))
	}
	r, err = m2.SnapshotAt("dep", span.To+5000)
	if err != nil {
		t.Fatal(err)
	}
	if r.Time != span.To || !slices.Equal(r.Deployment.Failovers, want.Failovers) || len(r.Deployment.Timelines) != 1 {
		t.Errorf("replayed after the crash at %d: %s", r.Time, dump(r.Deployment))
	}
	if b := findInstance(&r.Deployment, "b"); b == nil || len(b.Tasks) != 1 {
		t.Errorf("replayed b after the crash: %s", dump(b))
	}
	if len(eventsOf(r.Events, kindInstanceCrashed)) != 1 {
		t.Errorf("replayed events: %s", dump(r.Events))
	}
	var nse *NoSnapshotError
	if _, err := m2.SnapshotAt("dep", span.From-1); !errors.As(err, &nse) || nse.From != span.From {
		t.Errorf("a moment before the history: %v, want a NoSnapshotError naming its start", err)
	}
	if _, err := m2.SnapshotAt("other", span.To); !errors.As(err, &nse) || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("an unknown deployment: %v", err)
	}
}

// recordAt records a snapshot of dep at t (unix ms) with one throughput
// point, after the events of Seq up to t's second.
func recordAt(h *History, t int64) {
	h.record(&Snapshot{Time: t, Deployments: []Deployment{{DeploymentInfo: DeploymentInfo{ID: "dep"},
		Instances:  []Instance{{ID: "a", State: "running", Tasks: []Task{{ID: "0_0", Role: "active", State: "running"}}}},
		Throughput: []Point{{Time: t, RecordsPerSec: float64(t % 1000), Lag: t / 1000}}}}}, uint64(t/1000))
}

// TestHistoryAtOrBefore records three snapshots and reads the nearest at
// or before several moments, and their throughput.
func TestHistoryAtOrBefore(t *testing.T) {
	h := openHistory(t, t.TempDir(), HistoryOptions{})
	base := time.Now().Truncate(time.Second).UnixMilli()
	h.now = func() time.Time { return time.UnixMilli(base + 3000) }
	for i := range 3 {
		recordAt(h, base+int64(i)*1000)
		recordAt(h, base+int64(i)*1000+500) // same second: not recorded
	}
	for _, c := range []struct{ at, want int64 }{{base, base}, {base + 1500, base + 1000}, {base + 2000, base + 2000}, {base + 60_000, base + 2000}} {
		rs, points, _, err := h.snapshotAt("dep", c.at)
		if err != nil {
			t.Fatalf("at %d: %v", c.at-base, err)
		}
		if rs.T != c.want || len(points) != int((c.want-base)/1000)+1 || points[len(points)-1].Time != c.want {
			t.Errorf("at +%d ms: snapshot at +%d with points %v, want the one at +%d", c.at-base, rs.T-base, points, c.want-base)
		}
		if rs.Deployment.ID != "dep" || len(rs.Deployment.Instances) != 1 || rs.Deployment.Throughput != nil {
			t.Errorf("at +%d ms: %s", c.at-base, dump(rs.Deployment))
		}
	}
}

func historyFiles(t *testing.T, dir string) (names []string, size int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		names, size = append(names, e.Name()), size+info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, size
}

// TestHistoryTrims records a minute of snapshots and events, a segment
// each 5 s: only the last 20 s (the retention) stay, on disk and in the
// span; then with a byte cap, only the newest segments under it.
func TestHistoryTrims(t *testing.T) {
	dir := t.TempDir()
	h := openHistory(t, dir, HistoryOptions{Retention: 20 * time.Second, SegmentSpan: 5 * time.Second})
	base := time.Now().Truncate(time.Second).UnixMilli()
	var now int64
	h.now = func() time.Time { return time.UnixMilli(now) }
	for i := range int64(60) {
		now = base + i*1000
		h.writeEvents([]Event{{Seq: uint64(i + 1), Time: now, Deployment: "dep", Kind: kindError, Message: fmt.Sprint(i)}})
		recordAt(h, now)
	}
	span := h.span("dep")
	if span.To != now || span.From < now-25_000 || span.From > now-20_000 {
		t.Errorf("span +%d..+%d ms, want the last 20 to 25 s up to +%d", span.From-base, span.To-base, now-base)
	}
	names, _ := historyFiles(t, dir)
	if len(names) < 8 || len(names) > 12 {
		t.Errorf("files %v, want the 4 or 5 segments of each kind the retention keeps", names)
	}
	_, _, events, err := h.snapshotAt("dep", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) < 20 || events[0].Time < now-25_000 || events[len(events)-1].Time != now {
		t.Errorf("%d events from +%d ms", len(events), events[0].Time-base)
	}

	capDir := t.TempDir()
	const maxBytes = 4000
	hc := openHistory(t, capDir, HistoryOptions{MaxBytes: maxBytes, SegmentSpan: 2 * time.Second})
	hc.now = func() time.Time { return time.UnixMilli(now) }
	for i := range int64(60) {
		now = base + i*1000
		recordAt(hc, now)
		if _, size := historyFiles(t, capDir); size > maxBytes+1000 {
			t.Fatalf("after %d snapshots: %d bytes on disk, over the cap of %d by more than a segment", i+1, size, maxBytes)
		}
	}
	span = hc.span("dep")
	if span.To != now || len(span.Instants) > 20 || len(span.Instants) < 5 {
		t.Errorf("with a cap of %d bytes: %d instants up to +%d", maxBytes, len(span.Instants), span.To-base)
	}
	if _, _, _, err := hc.snapshotAt("dep", span.From); err != nil {
		t.Errorf("the oldest snapshot kept: %v", err)
	}
}

// TestHistoryCorruptTail cuts the last line of a snapshot segment short
// and garbles a line of an event segment, as a crash or a bad disk may:
// the History opens, logs each file with the offset it stopped at, keeps
// what came before and goes on recording.
func TestHistoryCorruptTail(t *testing.T) {
	dir := t.TempDir()
	h := openHistory(t, dir, HistoryOptions{})
	base := time.Now().Truncate(time.Second).UnixMilli()
	for i := range int64(3) {
		h.writeEvents([]Event{{Seq: uint64(i + 1), Time: base + i*1000, Deployment: "dep", Kind: kindError, Message: fmt.Sprint(i)}})
		recordAt(h, base+i*1000)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	snapFile := filepath.Join(dir, "dep", fmt.Sprintf("snapshots-%d.jsonl", base))
	evFile := filepath.Join(dir, "dep", fmt.Sprintf("events-%d.jsonl", base))
	snapData, err := os.ReadFile(snapFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(snapData, []byte("\n"))
	cut := len(lines[0]) + len(lines[1])
	if err := os.WriteFile(snapFile, snapData[:cut+len(lines[2])/2], 0o644); err != nil {
		t.Fatal(err)
	}
	evData, err := os.ReadFile(evFile)
	if err != nil {
		t.Fatal(err)
	}
	evLines := bytes.SplitAfter(evData, []byte("\n"))
	garbled := slices.Concat(evLines[0], []byte("{\"seq\": 2, garbage\n"), evLines[2])
	if err := os.WriteFile(evFile, garbled, 0o644); err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	h2 := openHistory(t, dir, HistoryOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, want := range []string{fmt.Sprintf("file=%s offset=%d", snapFile, cut), fmt.Sprintf("file=%s offset=%d", evFile, len(evLines[0]))} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q does not say %q", logs.String(), want)
		}
	}
	if !regexp.MustCompile(`level=ERROR`).MatchString(logs.String()) {
		t.Errorf("log %q: not an error", logs.String())
	}
	if evs := h2.takeLoaded(); len(evs) != 1 || evs[0].Seq != 1 {
		t.Errorf("events read: %s, want the first only", dump(evs))
	}
	span := h2.span("dep")
	if !slices.Equal(span.Instants, []int64{base, base + 1000}) {
		t.Errorf("instants %v, want the two before the cut", span.Instants)
	}
	recordAt(h2, base+3000)
	h2.writeEvents([]Event{{Seq: 4, Time: base + 3000, Deployment: "dep", Kind: kindError, Message: "3"}})
	rs, _, events, err := h2.snapshotAt("dep", base+3000)
	if err != nil || rs.T != base+3000 {
		t.Fatalf("after the corrupt tails, a new snapshot: %v at %d", err, rs.T)
	}
	if seqs := slices.Collect(func(yield func(uint64) bool) {
		for _, ev := range events {
			if !yield(ev.Seq) {
				return
			}
		}
	}); !slices.Equal(seqs, []uint64{1, 4}) {
		t.Errorf("events read after the corrupt tails: %v, want [1 4]", seqs)
	}
}

// TestHistoryPendingBounded emits more events than wait for Run without
// Run writing them: the oldest half goes when the queue is full, the
// write that follows logs how many were lost, and the newest are
// recorded.
func TestHistoryPendingBounded(t *testing.T) {
	var logs syncBuffer
	h := openHistory(t, t.TempDir(), HistoryOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	m := New(Options{History: h})
	m.AddDeployment(DeploymentInfo{ID: "dep"}, &fakeSource{})
	for i := range pendingEvents + 9 {
		m.InstanceEvent("dep", fmt.Sprint("instance-", i), "started")
	}
	m.mu.Lock()
	pending := len(m.pending)
	m.mu.Unlock()
	if want := pendingEvents/2 + 10; pending != want {
		t.Errorf("%d events wait, want %d", pending, want)
	}
	m.persist(m.publish())
	if want := fmt.Sprintf("dropped=%d", pendingEvents/2); !strings.Contains(logs.String(), want) {
		t.Errorf("log %q does not say %s", logs.String(), want)
	}
	_, _, events, err := h.snapshotAt("dep", time.Now().Add(time.Minute).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != pending || events[len(events)-1].Instance != fmt.Sprint("instance-", pendingEvents+8) {
		t.Errorf("%d events recorded, the last %+v; want the %d newest", len(events), events[len(events)-1], pending)
	}
}

// TestHistoryReadsOldDetailNames: events an older Braid recorded, under
// the detail names before issue 26, read back into the typed details
// with their values, both at open and when a past moment is replayed;
// a kind this Braid does not know is kept raw.
func TestHistoryReadsOldDetailNames(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Truncate(time.Second).UnixMilli()
	lines := []string{
		`{"seq":1,"time":%d,"deployment":"dep","task":"0_0","kind":"window-closed","message":"","detail":{"store":"s","start":10,"end":20,"closesAt":25,"keys":3}}`,
		`{"seq":2,"time":%d,"deployment":"dep","task":"0_0","kind":"restore-finished","message":"","detail":{"store":"s","restored":9,"tookMs":50,"rate":180}}`,
		`{"seq":3,"time":%d,"deployment":"dep","task":"0_0","kind":"task-failed-over","message":"","detail":{"from":"a","to":"b","replica":"standby","downtimeMs":70}}`,
		`{"seq":4,"time":%d,"deployment":"dep","task":"0_0","kind":"task-revoked","message":"","detail":{"clean":false,"lastRecord":7}}`,
		`{"seq":5,"time":%d,"deployment":"dep","kind":"from-the-future","message":"","detail":{"x":1}}`,
	}
	var data []byte
	for i, l := range lines {
		data = fmt.Appendf(data, l+"\n", base+int64(i))
	}
	path := filepath.Join(dir, "dep", fmt.Sprintf("events-%d.jsonl", base))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := []EventDetail{
		WindowClosedDetail{Store: "s", WindowStart: 10, WindowEnd: 20, ClosesAt: 25, Keys: 3},
		RestoreFinishedDetail{Store: "s", Restored: 9, DurationMs: 50, Rate: 180},
		TaskFailedOverDetail{From: "a", To: "b", FromReplica: "standby", DowntimeMs: 70},
		TaskRevokedDetail{LastRecordAt: 7},
		RawDetail(`{"x":1}`),
	}
	check := func(how string, evs []Event) {
		t.Helper()
		if len(evs) != len(want) {
			t.Fatalf("%s: %d events, want %d: %s", how, len(evs), len(want), dump(evs))
		}
		for i, ev := range evs {
			if !reflect.DeepEqual(ev.Detail, want[i]) {
				t.Errorf("%s: %s's detail %#v, want %#v", how, ev.Kind, ev.Detail, want[i])
			}
		}
	}
	h := openHistory(t, dir, HistoryOptions{})
	check("at open", h.takeLoaded())
	replayed, err := readEvents(segment{kind: segEvents, path: path, valid: int64(len(data))}, 5)
	if err != nil {
		t.Fatal(err)
	}
	check("replayed", replayed)
}

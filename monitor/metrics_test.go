package monitor

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/braidstream/braid/runtime/streams"
)

// wantFamilies is every family the monitor exports, with its type, help
// text and label names, as dashboards and alerts know them: a family
// missing, renamed or relabelled fails the tests.
var wantFamilies = map[string]struct {
	typ    dto.MetricType
	labels []string
	help   string
}{
	"braid_records_processed_total": {dto.MetricType_COUNTER, []string{"deployment", "instance", "task"},
		"Records an active task took from its input partitions on this instance."},
	"braid_records_dropped_late_total": {dto.MetricType_COUNTER, []string{"deployment", "instance", "store", "task"},
		"Records a windowed store dropped because their window had closed (once per window)."},
	"braid_record_lateness_ms": {dto.MetricType_GAUGE, []string{"deployment", "instance", "store", "task"},
		"Stream time minus the timestamp of the last record dropped as late."},
	"braid_stream_time_ms": {dto.MetricType_GAUGE, []string{"deployment", "instance", "task"},
		"A task's stream time: the largest record timestamp it processed, in ms since the epoch."},
	"braid_consumer_lag_records": {dto.MetricType_GAUGE, []string{"deployment", "instance", "task"},
		"Records in a task's input partitions not processed yet (end offset minus position)."},
	"braid_restore_remaining_records": {dto.MetricType_GAUGE, []string{"deployment", "instance", "store", "task"},
		"Changelog records a store still has to restore before its task processes."},
	"braid_standby_lag_records": {dto.MetricType_GAUGE, []string{"deployment", "instance", "store", "task"},
		"Changelog records a standby or warm-up replica's store has not applied yet."},
	"braid_standby_lag_ms": {dto.MetricType_GAUGE, []string{"deployment", "instance", "store", "task"},
		"How far behind in time a standby or warm-up replica's store is."},
	"braid_commit_latency_ms": {dto.MetricType_GAUGE, []string{"deployment", "instance"},
		"Duration of an instance's last commit (flush and commit)."},
	"braid_failovers_total": {dto.MetricType_COUNTER, []string{"deployment", "instance", "task"},
		"Tasks that failed over off an instance (labelled with the instance that failed)."},
	"braid_failover_downtime_ms": {dto.MetricType_GAUGE, []string{"deployment", "task"},
		"How long a task was processed nowhere during its last failover."},
	"braid_broker_unreachable_seconds": {dto.MetricType_GAUGE, []string{"broker", "deployment", "instance"},
		"How long a broker the instance cannot reach now has not answered it; no series while it answers."},
	"braid_snapshots_total": {dto.MetricType_COUNTER, []string{"deployment", "instance", "store", "task"},
		"Snapshots of a store taken and uploaded to the blob store (streams.Config.Snapshots)."},
	"braid_snapshots_failed_total": {dto.MetricType_COUNTER, []string{"deployment", "instance", "store", "task"},
		"Snapshots of a store that failed; the store carries on without them."},
	"braid_snapshot_bytes": {dto.MetricType_GAUGE, []string{"deployment", "instance", "store", "task"},
		"Bytes uploaded by a store's last snapshot."},
	"braid_snapshot_time_ms": {dto.MetricType_GAUGE, []string{"deployment", "instance", "store", "task"},
		"When a store's last snapshot was taken, in ms since the epoch: its age is the scrape's time minus it."},
	"braid_restores_total": {dto.MetricType_COUNTER, []string{"deployment", "instance", "source", "store", "task"},
		`Restores of a store finished, by where its state came from: source="snapshot" (a snapshot, then the changelog's tail) or "changelog" (the changelog only).`},
}

// scrape writes m's metrics and parses them with Prometheus' own text
// parser, which rejects what a Prometheus server would.
func scrape(t testing.TB, m *Monitor) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := m.WriteMetrics(&buf); err != nil {
		t.Fatalf("writing the metrics: %v", err)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("parsing the metrics: %v\n%s", err, buf.String())
	}
	return fams, buf.String()
}

// seriesValue returns the value of mf's series whose labels are exactly
// kv (name, value, ...).
func seriesValue(mf *dto.MetricFamily, kv ...string) (float64, bool) {
	want := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		want[kv[i]] = kv[i+1]
	}
	for _, m := range mf.GetMetric() {
		if maps.Equal(labelMap(m), want) {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestWriteMetrics feeds a deployment with an awkward id hooks and a
// sample, and checks that the exposition parses and holds every family
// with its type, help and labels and the expected series, with the label
// values escaped.
func TestWriteMetrics(t *testing.T) {
	m := New(Options{})
	const dep = "dep \"one\"\\two\nthree"
	src := &fakeSource{}
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: dep}, src))
	a, s := streams.TaskID{Partition: 0}, streams.TaskID{Partition: 1}
	src.set([]streams.InstanceInfo{
		{ID: "instance-1", State: streams.InstanceRunning, Since: time.Now(), Stats: streams.Stats{State: streams.Running,
			Tasks: []streams.TaskStats{{ID: a, StreamTime: t0 + 5000, Processed: 42, Restoring: true,
				Partitions: []streams.PartitionStats{
					{TopicPartition: streams.TopicPartition{Topic: "in", Partition: 0}, Position: 40, EndOffset: 47, Lag: 7},
					{TopicPartition: streams.TopicPartition{Topic: "in2", Partition: 0}, Position: -1, EndOffset: -1, Lag: -1},
				}}},
			Standbys: []streams.StandbyStats{{ID: s, Stores: []streams.StandbyStoreStats{
				{Name: "per-window", Lag: 12, TimeLag: 1500 * time.Millisecond}}}},
			UnreachableBrokers: []streams.UnreachableBroker{{Broker: "127.0.0.1:9092", Since: time.Now().Add(-5 * time.Second), Err: "refused"}}}},
		{ID: "instance-2", State: streams.InstanceCrashed, Since: time.Now()},
	})
	h.OnCommit(streams.CommitEvent{InstanceID: "instance-1", Took: 2500 * time.Microsecond})
	h.OnRestoreStart(streams.RestoreEvent{InstanceID: "instance-1", Task: a, Store: "per-window", StartOffset: 100, EndOffset: 1100})
	h.OnRestoreProgress(streams.RestoreEvent{InstanceID: "instance-1", Task: a, Store: "per-window", StartOffset: 100, EndOffset: 1100,
		Restored: 400, Rate: 200})
	for range 3 {
		h.OnLateRecordDropped(streams.LateRecordEvent{InstanceID: "instance-1", Task: a, Store: "per-window",
			Timestamp: t0 + 1000, StreamTime: t0 + 5000})
	}
	h.OnTaskFailedOver(streams.FailoverEvent{Task: s, From: "instance-2", To: "instance-1", Cause: "crash",
		Downtime: 3200 * time.Millisecond, ResumedAt: time.Now()})
	before := time.Now()
	for _, ev := range []streams.SnapshotEvent{{Bytes: 1000}, {Err: errors.New("uploading: disk full")}, {Bytes: 4096}} {
		ev.InstanceID, ev.Task, ev.Store = "instance-1", a, "per-window"
		h.OnSnapshotTaken(ev)
	}
	fromSnapshot := &streams.SnapshotRestore{ID: "s-1", TakenAt: time.Now(), Bytes: 4096}
	for _, snap := range []*streams.SnapshotRestore{fromSnapshot, nil, fromSnapshot} {
		h.OnRestoreEnd(streams.RestoreEvent{InstanceID: "instance-1", Task: s, Store: "per-window", Snapshot: snap})
	}
	m.publish()

	fams, text := scrape(t, m)
	if got, want := slices.Sorted(maps.Keys(fams)), slices.Sorted(maps.Keys(wantFamilies)); !slices.Equal(got, want) {
		t.Errorf("families %v, want %v", got, want)
	}
	for name, want := range wantFamilies {
		mf := fams[name]
		if mf == nil {
			continue // reported above
		}
		if mf.GetType() != want.typ || mf.GetHelp() != want.help {
			t.Errorf("%s is a %v with help %q, want a %v with %q", name, mf.GetType(), mf.GetHelp(), want.typ, want.help)
		}
		for _, s := range mf.GetMetric() {
			if got := slices.Sorted(maps.Keys(labelMap(s))); !slices.Equal(got, want.labels) {
				t.Errorf("%s has a series labelled %v, want %v", name, got, want.labels)
			}
		}
	}
	type series struct {
		name  string
		kv    []string
		value float64
	}
	for _, want := range []series{
		{"braid_records_processed_total", []string{"instance", "instance-1", "task", "0_0"}, 42},
		{"braid_stream_time_ms", []string{"instance", "instance-1", "task", "0_0"}, float64(t0 + 5000)},
		{"braid_consumer_lag_records", []string{"instance", "instance-1", "task", "0_0"}, 7},
		{"braid_restore_remaining_records", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 600},
		{"braid_records_dropped_late_total", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 3},
		{"braid_record_lateness_ms", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 4000},
		{"braid_standby_lag_records", []string{"instance", "instance-1", "task", "0_1", "store", "per-window"}, 12},
		{"braid_standby_lag_ms", []string{"instance", "instance-1", "task", "0_1", "store", "per-window"}, 1500},
		{"braid_commit_latency_ms", []string{"instance", "instance-1"}, 2.5},
		{"braid_failovers_total", []string{"instance", "instance-2", "task", "0_1"}, 1},
		{"braid_failover_downtime_ms", []string{"task", "0_1"}, 3200},
		{"braid_snapshots_total", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 2},
		{"braid_snapshots_failed_total", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 1},
		{"braid_snapshot_bytes", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 4096},
		{"braid_restores_total", []string{"instance", "instance-1", "task", "0_1", "store", "per-window", "source", "snapshot"}, 2},
		{"braid_restores_total", []string{"instance", "instance-1", "task", "0_1", "store", "per-window", "source", "changelog"}, 1},
	} {
		mf := fams[want.name]
		if mf == nil {
			continue // reported above
		}
		if got, ok := seriesValue(mf, append([]string{"deployment", dep}, want.kv...)...); !ok {
			t.Errorf("no series %s%v of deployment %q in\n%s", want.name, want.kv, dep, text)
		} else if got != want.value {
			t.Errorf("%s%v = %v, want %v", want.name, want.kv, got, want.value)
		}
	}
	if mf := fams["braid_broker_unreachable_seconds"]; mf != nil {
		got, ok := seriesValue(mf, "deployment", dep, "instance", "instance-1", "broker", "127.0.0.1:9092")
		if !ok || got < 5 || got > 3600 {
			t.Errorf("braid_broker_unreachable_seconds = %v (found %v), want the 5 s and more since the broker's last answer", got, ok)
		}
	}
	if mf := fams["braid_snapshot_time_ms"]; mf != nil {
		got, _ := seriesValue(mf, "deployment", dep, "instance", "instance-1", "task", "0_0", "store", "per-window")
		if got < float64(before.UnixMilli()) || got > float64(time.Now().UnixMilli()) {
			t.Errorf("braid_snapshot_time_ms = %v, want the time of the last snapshot, %d or after", got, before.UnixMilli())
		}
	}
	for name, mf := range fams {
		for _, s := range mf.GetMetric() {
			if labelMap(s)["instance"] == "instance-2" && name != "braid_failovers_total" {
				t.Errorf("the crashed instance has a series %s %v", name, labelMap(s))
			}
		}
	}

	// A pedantic registry checks that what Collect sends matches what
	// Describe declares.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collector())
	if _, err := reg.Gather(); err != nil {
		t.Errorf("a pedantic registry gathering the collector: %v", err)
	}
}

// TestMetricsInvalidUTF8: a deployment id that is not UTF-8 costs its
// series nothing but the odd bytes; the scrape does not fail.
func TestMetricsInvalidUTF8(t *testing.T) {
	m := New(Options{})
	src := &fakeSource{}
	m.AddDeployment(DeploymentInfo{ID: "odd\xffid"}, src)
	src.set([]streams.InstanceInfo{{ID: "instance-1", State: streams.InstanceRunning, Since: time.Now(),
		Stats: streams.Stats{State: streams.Running, Tasks: []streams.TaskStats{{ID: streams.TaskID{}, StreamTime: -1, Processed: 9}}}}})
	m.publish()
	fams, text := scrape(t, m)
	mf := fams["braid_records_processed_total"]
	if mf == nil {
		t.Fatalf("no braid_records_processed_total in\n%s", text)
	}
	if v, ok := seriesValue(mf, "deployment", "odd\uFFFDid", "instance", "instance-1", "task", "0_0"); !ok || v != 9 {
		t.Errorf("processed %v %v, want 9 for deployment odd\uFFFDid in\n%s", v, ok, text)
	}
}

// TestMetricsEmpty: a monitor without deployments exports no series,
// and the exposition is still valid.
func TestMetricsEmpty(t *testing.T) {
	if fams, text := scrape(t, New(Options{})); len(fams) != 0 {
		t.Errorf("families without deployments:\n%s", text)
	}
}

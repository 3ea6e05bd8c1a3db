package monitor

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fullDetails holds, per kind of detailTypes, a detail with every field
// set, so that a field that does not survive JSON shows.
func fullDetails() map[string]EventDetail {
	lag, projected, safe := int64(7), int64(900), true
	load := SnapshotLoad{SnapshotID: "s-9", SnapshotTakenAt: 880, SnapshotBytes: 96_000_000, SnapshotLoadMs: 1200,
		SkippedSnapshots: []SkippedSnapshot{{ID: "s-10", Reason: "checksum differs"}}}
	return map[string]EventDetail{
		kindDeploymentAdded: DeploymentAddedDetail{Design: "d1", Revision: 3, ApplicationID: "app", Instances: 2, Standbys: 1,
			Guarantee: "exactly-once"},
		kindWindowClosed: WindowClosedDetail{Store: "per-10s", WindowStart: 10_000, WindowEnd: 20_000, ClosesAt: 25_000,
			StreamTime: 25_001, GraceMs: 5000, Keys: 6, Emitted: true},
		kindLateDrop: LateDropDetail{Store: "per-10s", Timestamp: 11_000, StreamTime: 40_000, WindowStart: 10_000, WindowEnd: 20_000,
			Topic: "in", Partition: 2, Offset: 41, Suppressed: 3},
		kindTaskAssigned:    TaskAssignedDetail{Partitions: []string{"in/0", "in/1"}, FromReplica: "standby"},
		kindTaskRevoked:     TaskRevokedDetail{Clean: true, LastRecordAt: 1234},
		kindTaskResumed:     TaskResumedDetail{AssignedAt: 100, FirstRecordAt: 140, Restored: 12, FromReplica: "warm-up"},
		kindRebalance:       RebalanceDetail{DurationMs: 80, Kept: []string{"0_0", "1_0"}},
		kindError:           ErrorDetail{Fatal: true, Suppressed: 4},
		kindStandbyPromoted: StandbyPromotedDetail{Warmup: true, Lag: 5, TimeLagMs: 60},
		kindTaskFailedOver: TaskFailedOverDetail{From: "a", To: "b", Cause: "crash", FromReplica: "standby", DetectionMs: 10,
			DetectedBy: "supervisor", RecoveryMs: 20, DowntimeMs: 35, Restored: 8, ResumedAt: 1035, FailedAt: 1000,
			LastRecordAt: 1000 - 5, AssignedAt: 1010, StandbyLag: &lag, ProjectedDowntimeMs: &projected, ProjectedSafe: &safe},
		kindRestoreStarted: RestoreStartedDetail{Store: "counts", Changelog: "app-counts-changelog", Partition: 1,
			StartOffset: 3, EndOffset: 90, SnapshotLoad: load},
		kindRestoreProgress: RestoreProgressDetail{Store: "counts", Offset: 50, Restored: 47, Total: 87, Rate: 1500.5, EtaMs: 27,
			SnapshotLoad: load},
		kindRestoreFinished: RestoreFinishedDetail{Store: "counts", Changelog: "app-counts-changelog", Partition: 1, Restored: 87,
			DurationMs: 58, Rate: 1500.5, SnapshotLoad: load},
		kindSnapshotTaken: SnapshotTakenDetail{Store: "counts", SnapshotID: "s-11", ChangelogOffset: 90, StreamTime: 5000,
			SnapshotBytes: 1_000_000, SnapshotFiles: 3, DurationMs: 80, Pruned: []string{"s-8"}, Error: "uploading: disk full"},
		kindStandbyStarted:    StandbyStartedDetail{Warmup: true, Store: "counts", Offset: 10, EndOffset: 90, Lag: 80},
		kindBrokerUnreachable: BrokerUnreachableDetail{Broker: "127.0.0.1:9092", Since: 1000, Error: "dial tcp: refused"},
		kindBrokerReachable:   BrokerReachableDetail{Broker: "127.0.0.1:9092", Since: 1000, SilentMs: 12_000},
	}
}

// TestDetailRoundTrip: an event of every kind of detailTypes comes back
// from its JSON equal, its detail of its kind's type.
func TestDetailRoundTrip(t *testing.T) {
	full := fullDetails()
	if got, want := slices.Sorted(maps.Keys(full)), slices.Sorted(maps.Keys(detailTypes)); !slices.Equal(got, want) {
		t.Fatalf("the test's kinds %v, detailTypes' %v", got, want)
	}
	for kind, d := range full {
		if reflect.TypeOf(d) != reflect.TypeOf(detailTypes[kind]) {
			t.Errorf("%s: the test's detail is a %T, detailTypes' a %T", kind, d, detailTypes[kind])
		}
		v := reflect.ValueOf(d)
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("%s: the test leaves %s zero", kind, v.Type().Field(i).Name)
			}
		}
		ev := Event{Seq: 9, Time: 1000, Deployment: "dep", Instance: "a", Task: "0_0", Kind: kind, Message: "m", Detail: d}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, ev) {
			t.Errorf("%s came back as %#v", b, back.Detail)
		}
	}
}

// TestDetailNames pins the names the live page reads (static/live/*.js)
// and the history holds, kind by kind: those the hooks wrote before the
// details were typed.
func TestDetailNames(t *testing.T) {
	want := map[string]string{
		kindDeploymentAdded: "applicationId design guarantee instances revision standbys",
		kindWindowClosed:    "closesAt emitted graceMs keys store streamTime windowEnd windowStart",
		kindLateDrop:        "offset partition store streamTime suppressed timestamp topic windowEnd windowStart",
		kindTaskAssigned:    "fromReplica partitions",
		kindTaskRevoked:     "clean lastRecordAt",
		kindTaskResumed:     "assignedAt firstRecordAt fromReplica restored",
		kindRebalance:       "durationMs kept",
		kindError:           "fatal suppressed",
		kindStandbyStarted:  "endOffset lag offset store warmup",
		kindStandbyPromoted: "lag timeLagMs warmup",
		kindRestoreStarted: "changelog endOffset partition skippedSnapshots snapshotBytes snapshotId snapshotLoadMs snapshotTakenAt " +
			"startOffset store",
		kindRestoreProgress: "etaMs offset rate restored skippedSnapshots snapshotBytes snapshotId snapshotLoadMs snapshotTakenAt " +
			"store total",
		kindRestoreFinished: "changelog durationMs partition rate restored skippedSnapshots snapshotBytes snapshotId snapshotLoadMs " +
			"snapshotTakenAt store",
		kindSnapshotTaken:     "changelogOffset durationMs error pruned snapshotBytes snapshotFiles snapshotId store streamTime",
		kindBrokerUnreachable: "broker error since",
		kindBrokerReachable:   "broker silentMs since",
		kindTaskFailedOver: "assignedAt cause detectedBy detectionMs downtimeMs failedAt from fromReplica lastRecordAt " +
			"projectedDowntimeMs projectedSafe recoveryMs restored resumedAt standbyLag to",
	}
	for kind, d := range fullDetails() {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(slices.Sorted(maps.Keys(obj)), " "); got != want[kind] {
			t.Errorf("%s: names %q, want %q", kind, got, want[kind])
		}
	}
}

// TestDetailOptionalFields: the fields a hook leaves out when it does not
// know them are left out of the JSON, and a zero that is a value (a
// caught-up standby, a projection of no downtime) is not.
func TestDetailOptionalFields(t *testing.T) {
	zero, unsafe := int64(0), false
	for _, c := range []struct {
		d    EventDetail
		want string
	}{
		{TaskRevokedDetail{Clean: true}, `{"clean":true}`},
		{RebalanceDetail{DurationMs: 5}, `{"durationMs":5}`},
		{ErrorDetail{}, `{"fatal":false}`},
		{RestoreFinishedDetail{Store: "s"}, `{"store":"s","changelog":"","partition":0,"restored":0,"durationMs":0,"rate":0}`},
		{TaskFailedOverDetail{StandbyLag: &zero, ProjectedDowntimeMs: &zero, ProjectedSafe: &unsafe},
			`{"from":"","to":"","cause":"","fromReplica":"","detectionMs":0,"detectedBy":"","recoveryMs":0,"downtimeMs":0,` +
				`"restored":0,"resumedAt":0,"standbyLag":0,"projectedDowntimeMs":0,"projectedSafe":false}`},
	} {
		if b, _ := json.Marshal(c.d); string(b) != c.want {
			t.Errorf("%T: %s, want %s", c.d, b, c.want)
		}
	}
}

// TestRawDetail: a kind the table does not know, and a detail that is
// not its kind's, are kept as they were read and written out unchanged;
// an event without a detail has none.
func TestRawDetail(t *testing.T) {
	for _, line := range []string{
		`{"seq":1,"time":2,"deployment":"d","kind":"from-the-future","message":"","detail":{"x":[1,2],"y":"z"}}`,
		`{"seq":1,"time":2,"deployment":"d","kind":"rebalance","message":"","detail":{"durationMs":"slow"}}`,
		`{"seq":1,"time":2,"deployment":"d","kind":"instance-crashed","message":"","detail":{"why":"oom"}}`,
	} {
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if _, ok := ev.Detail.(RawDetail); !ok {
			t.Errorf("%s: detail %T, want a RawDetail", line, ev.Detail)
		}
		if b, _ := json.Marshal(ev); string(b) != line {
			t.Errorf("written out again as %s, want %s", b, line)
		}
	}
	var ev Event
	if err := json.Unmarshal([]byte(`{"kind":"instance-crashed","detail":null}`), &ev); err != nil || ev.Detail != nil {
		t.Errorf("an event without a detail decoded to %#v, %v", ev.Detail, err)
	}
	if b, _ := json.Marshal(ev); strings.Contains(string(b), "detail") {
		t.Errorf("an event without a detail written as %s", b)
	}
}

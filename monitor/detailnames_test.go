package monitor

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestUpgradeDetail: a detail recorded under the old names is renamed on
// the raw object, a new name winning over an old one, and one without an
// old name is left as it is.
func TestUpgradeDetail(t *testing.T) {
	for _, c := range []struct{ kind, old, want string }{
		{kindWindowClosed, `{"store":"s","start":1,"end":2}`, `{"store":"s","windowEnd":2,"windowStart":1}`},
		{kindRestoreFinished, `{"tookMs":5}`, `{"durationMs":5}`},
		{kindTaskFailedOver, `{"replica":"standby"}`, `{"fromReplica":"standby"}`},
		{kindTaskFailedOver, `{"fromReplica":"warm-up","replica":"standby"}`, `{"fromReplica":"warm-up"}`},
		{kindTaskFailedOver, `{"fromReplica":"warm-up"}`, `{"fromReplica":"warm-up"}`},
		{kindTaskRevoked, `{"clean":false,"lastRecord":7}`, `{"clean":false,"lastRecordAt":7}`},
		// A value that reads as an old name is not one.
		{kindWindowClosed, `{"store":"start"}`, `{"store":"start"}`},
		{kindRebalance, `{"durationMs":3}`, `{"durationMs":3}`},
	} {
		if got := upgradeDetail(c.kind, json.RawMessage(c.old)); string(got) != c.want {
			t.Errorf("%s %s: detail %s, want %s", c.kind, c.old, got, c.want)
		}
	}
}

// TestOldDetailNamesDecode: an event line recorded under the old names
// decodes into its kind's struct with the values.
func TestOldDetailNamesDecode(t *testing.T) {
	for _, c := range []struct {
		line string
		want EventDetail
	}{
		{`{"kind":"window-closed","detail":{"store":"s","start":1,"end":2,"closesAt":3,"keys":4}}`,
			WindowClosedDetail{Store: "s", WindowStart: 1, WindowEnd: 2, ClosesAt: 3, Keys: 4}},
		{`{"kind":"restore-finished","detail":{"store":"s","restored":9,"tookMs":5,"rate":1.5}}`,
			RestoreFinishedDetail{Store: "s", Restored: 9, DurationMs: 5, Rate: 1.5}},
		{`{"kind":"task-failed-over","detail":{"from":"a","to":"b","replica":"standby","standbyLag":0}}`,
			TaskFailedOverDetail{From: "a", To: "b", FromReplica: "standby", StandbyLag: new(int64)}},
		{`{"kind":"task-revoked","detail":{"clean":false,"lastRecord":7}}`,
			TaskRevokedDetail{LastRecordAt: 7}},
	} {
		var ev Event
		if err := json.Unmarshal([]byte(c.line), &ev); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ev.Detail, c.want) {
			t.Errorf("%s: detail %#v, want %#v", c.line, ev.Detail, c.want)
		}
	}
}

package monitor

import (
	"encoding/json"
	"testing"
)

// TestUpgradeDetail: an event recorded under the old names reads back
// under the new ones.
func TestUpgradeDetail(t *testing.T) {
	for _, c := range []struct{ old, want string }{
		{`{"kind":"window-closed","detail":{"store":"s","start":1,"end":2}}`, `{"store":"s","windowEnd":2,"windowStart":1}`},
		{`{"kind":"restore-finished","detail":{"tookMs":5}}`, `{"durationMs":5}`},
		{`{"kind":"task-failed-over","detail":{"replica":"standby"}}`, `{"fromReplica":"standby"}`},
		{`{"kind":"task-failed-over","detail":{"fromReplica":"warm-up"}}`, `{"fromReplica":"warm-up"}`},
		{`{"kind":"task-revoked","detail":{"clean":false,"lastRecord":7}}`, `{"clean":false,"lastRecordAt":7}`},
	} {
		var ev Event
		if err := json.Unmarshal([]byte(c.old), &ev); err != nil {
			t.Fatal(err)
		}
		upgradeDetail(&ev)
		got, _ := json.Marshal(ev.Detail)
		if string(got) != c.want {
			t.Errorf("%s: detail %s, want %s", c.old, got, c.want)
		}
	}
}

package monitor

import (
	"reflect"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestAssessRisk projects the loss of each instance from a snapshot's
// instances: a caught-up standby is safe and costs detection only, a
// standby beyond the acceptable lag is at risk and costs its replay at the
// restore rate, state with no replica is at risk with no projection, a
// stateless task replays nothing, a task's input rate sets the gap before
// the crash, and the session timeout counts when no
// Supervisor sees the crash.
func TestAssessRisk(t *testing.T) {
	active := func(id string) Task { return Task{ID: id, Role: "active", State: "running"} }
	replica := func(id, role string, lag int64) Task {
		return Task{ID: id, Role: role, State: role, StandbyLag: &StandbyLag{Records: lag}}
	}
	inst := func(id, state string, tasks ...Task) Instance { return Instance{ID: id, State: state, Tasks: tasks} }
	supervised := RiskParams{DetectedBy: streams.DetectedBySupervisor, SessionTimeout: 3 * time.Second,
		HeartbeatInterval: 250 * time.Millisecond, Rebalance: 400 * time.Millisecond, Resume: 100 * time.Millisecond, AcceptableRecoveryLag: 100,
		RestoreRate: 1000, Stateful: map[int]bool{0: true}}
	unseen := supervised
	unseen.DetectedBy = streams.DetectedBySessionTimeout

	tests := []struct {
		name      string
		params    RiskParams
		instances []Instance
		want      map[string]*Risk
	}{{
		name:   "caught-up standbys: safe, detection only",
		params: supervised,
		instances: []Instance{
			inst("a", "running", active("0_0"), replica("0_1", "standby", 0)),
			inst("b", "running", active("0_1"), replica("0_0", "standby", 40)),
		},
		want: map[string]*Risk{
			"a": {Safe: true, WorstTask: "0_0", ProjectedDowntimeMs: 790, Tasks: []TaskRisk{
				{Task: "0_0", Safe: true, Replica: "b", Role: "standby", Lag: 40, ProjectedDowntimeMs: 790}}},
			"b": {Safe: true, WorstTask: "0_1", ProjectedDowntimeMs: 750, Tasks: []TaskRisk{
				{Task: "0_1", Safe: true, Replica: "a", Role: "standby", Lag: 0, ProjectedDowntimeMs: 750}}},
		},
	}, {
		name:   "the best of two replicas; one beyond the acceptable lag is at risk",
		params: supervised,
		instances: []Instance{
			inst("a", "running", active("0_0"), active("0_1")),
			inst("b", "running", replica("0_0", "warmup", 5000), replica("0_1", "standby", 2500)),
			inst("c", "running", replica("0_0", "standby", 3000)),
		},
		want: map[string]*Risk{
			"a": {Safe: false, WorstTask: "0_0", ProjectedDowntimeMs: 3750, Tasks: []TaskRisk{
				{Task: "0_0", Safe: false, Replica: "c", Role: "standby", Lag: 3000, ProjectedDowntimeMs: 3750},
				{Task: "0_1", Safe: false, Replica: "b", Role: "standby", Lag: 2500, ProjectedDowntimeMs: 3250}}},
			"b": {Safe: true, Tasks: []TaskRisk{}},
			"c": {Safe: true, Tasks: []TaskRisk{}},
		},
	}, {
		name:   "the gap before a crash: four mean intervals between records",
		params: supervised,
		instances: []Instance{
			inst("a", "running", Task{ID: "0_0", Role: "active", State: "running", InPerSec: 8}, Task{ID: "1_0", Role: "active", State: "running", InPerSec: 3}),
			inst("b", "running", replica("0_0", "standby", 0)),
		},
		want: map[string]*Risk{
			"a": {Safe: true, WorstTask: "1_0", ProjectedDowntimeMs: 2084, Tasks: []TaskRisk{
				{Task: "0_0", Safe: true, Replica: "b", Role: "standby", Lag: 0, GapMs: 500, ProjectedDowntimeMs: 1250},
				{Task: "1_0", Safe: true, Stateless: true, Lag: -1, GapMs: 1334, ProjectedDowntimeMs: 2084}}},
			"b": {Safe: true, Tasks: []TaskRisk{}},
		},
	}, {
		name:   "state with no replica: at risk, unknown; stateless: safe",
		params: supervised,
		instances: []Instance{
			inst("a", "running", active("0_0"), active("1_0")),
			inst("b", "crashed"),
			inst("c", "rebalancing", active("1_1")),
		},
		want: map[string]*Risk{
			"a": {Safe: false, WorstTask: "0_0", ProjectedDowntimeMs: -1, Tasks: []TaskRisk{
				{Task: "0_0", Safe: false, Lag: -1, ProjectedDowntimeMs: -1},
				{Task: "1_0", Safe: true, Stateless: true, Lag: -1, ProjectedDowntimeMs: 750}}},
			"c": {Safe: true, WorstTask: "1_1", ProjectedDowntimeMs: 750, Tasks: []TaskRisk{
				{Task: "1_1", Safe: true, Stateless: true, Lag: -1, ProjectedDowntimeMs: 750}}},
		},
	}, {
		name:   "a replica on a crashed instance covers nothing; unseen crashes wait for the session timeout",
		params: unseen,
		instances: []Instance{
			inst("a", "running", active("0_0"), active("0_1")),
			inst("b", "crashed", replica("0_0", "standby", 0)),
			inst("c", "running", replica("0_1", "standby", 0)),
		},
		want: map[string]*Risk{
			"a": {Safe: false, WorstTask: "0_0", ProjectedDowntimeMs: -1, Tasks: []TaskRisk{
				{Task: "0_0", Safe: false, Lag: -1, ProjectedDowntimeMs: -1},
				{Task: "0_1", Safe: true, Replica: "c", Role: "standby", Lag: 0, ProjectedDowntimeMs: 3750}}},
			"c": {Safe: true, Tasks: []TaskRisk{}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AssessRisk(tt.instances, tt.params)
			for _, r := range tt.want {
				r.DetectionMs, r.DetectedBy, r.ResumeMs, r.RestoreRate = tt.params.Detection().Milliseconds(), tt.params.DetectedBy, 100, tt.params.RestoreRate
			}
			if !reflect.DeepEqual(got, tt.want) {
				for id, r := range got {
					t.Errorf("%s: %+v", id, *r)
				}
				for id, r := range tt.want {
					t.Errorf("want %s: %+v", id, *r)
				}
			}
		})
	}

	// The riskiest: not safe before safe, then the longest, unknown
	// longest of all.
	got := AssessRisk(tests[1].instances, supervised)
	ins := tests[1].instances
	for i := range ins {
		ins[i].Risk = got[ins[i].ID]
	}
	if r := RiskiestInstance(ins); r != "a" {
		t.Errorf("riskiest %q, want a", r)
	}
	ins = tests[0].instances
	got = AssessRisk(ins, supervised)
	for i := range ins {
		ins[i].Risk = got[ins[i].ID]
	}
	if r := RiskiestInstance(ins); r != "a" {
		t.Errorf("riskiest of two safe %q, want a (790 ms against 750)", r)
	}
}

package assign_test

import (
	"slices"
	"testing"

	"github.com/braidstream/braid/runtime/internal/assign"
)

// partitionsOf returns the source partitions of tasks, as a member that
// runs them owns them.
func partitionsOf(tasks []assign.Task) map[string][]int32 {
	out := make(map[string][]int32)
	for _, task := range tasks {
		for _, topic := range subtopologies[task.Subtopology].Topics {
			if task.Partition < partitions[topic] {
				out[topic] = append(out[topic], task.Partition)
			}
		}
	}
	return out
}

// TestCooperativeWithholdsMovingTasks adds a member to one that owns every
// task. The first rebalance gives the new member no task its peer still
// owns, only the news that they are pending, and leaves the staying tasks
// where they were; once the old owner gave the moving tasks up, the
// follow-up hands them over, and the result is the eager plan.
func TestCooperativeWithholdsMovingTasks(t *testing.T) {
	all := []assign.Task{task("0_0"), task("0_1"), task("0_2"), task("1_0"), task("1_1")}
	offsets := map[assign.Task]int64{task("0_0"): 1000, task("0_1"): 1000, task("0_2"): 1000}
	opts := assign.Options{Cooperative: true}
	m1 := newMember("m1", opts, all, offsets)
	m1.owned = partitionsOf(all)
	m2 := newMember("m2", opts, nil, nil)
	eager := rebalance(t, []*member{newMember("m1", assign.Options{}, all, offsets), newMember("m2", assign.Options{}, nil, nil)})
	if len(eager["m2"].Active) == 0 {
		t.Fatalf("the eager plan moves nothing to m2: %+v", eager)
	}

	first := rebalance(t, []*member{m1, m2})
	if len(first["m2"].Active) != 0 {
		t.Errorf("first rebalance: m2 got %v while m1 still owns them", first["m2"].Active)
	}
	if !slices.Equal(first["m1"].Active, eager["m1"].Active) {
		t.Errorf("first rebalance: m1 keeps %v, want the tasks the plan leaves it, %v", first["m1"].Active, eager["m1"].Active)
	}
	if !slices.Equal(first["m2"].Pending, eager["m2"].Active) {
		t.Errorf("first rebalance: m2's pending tasks are %v, want those the plan moves to it, %v", first["m2"].Pending, eager["m2"].Active)
	}
	if !slices.Equal(first["m2"].Standby, eager["m2"].Standby) || !slices.Equal(first["m2"].Warmup, eager["m2"].Warmup) {
		t.Errorf("first rebalance: m2's replicas %+v differ from the plan's %+v", first["m2"], eager["m2"])
	}

	// m1 revoked what it lost and joins again, as franz-go does.
	m1.active = first["m1"].Active
	m1.owned = partitionsOf(m1.active)
	second := rebalance(t, []*member{m1, m2})
	for _, id := range []string{"m1", "m2"} {
		if !slices.Equal(second[id].Active, eager[id].Active) {
			t.Errorf("follow-up: %s runs %v, want the eager plan's %v", id, second[id].Active, eager[id].Active)
		}
		if len(second[id].Pending) != 0 {
			t.Errorf("follow-up: %s still has pending tasks %v", id, second[id].Pending)
		}
	}
}

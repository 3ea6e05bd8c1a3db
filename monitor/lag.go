package monitor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/braidstream/braid/runtime/streams"
)

// A failed instance reports no stats: a Supervisor keeps none of an App
// that stopped, so the lag of the tasks it held would vanish, and the
// deployment's lag read 0, while no one consumes their partitions. So the
// monitor keeps the tasks an instance held when it failed (the fatal
// error comes before the App drops them) with their input partitions,
// and, while the instance stays failed and no running instance has taken
// a task over, shows the task on it, failed, with its lag from the
// broker: each input partition's end offset less the group's committed
// offset (its log start offset when the group committed none), read once
// a second at most when the Source implements BrokerLag.

// BrokerLag is what a Source also implements to have the lag of a
// failed instance's tasks read from the broker.
type BrokerLag interface {
	// CommittedLag returns the lag of consumer group group on each of
	// partitions that it can tell: the end offset (the last stable one
	// when readCommitted) less the group's committed offset.
	CommittedLag(ctx context.Context, group string, readCommitted bool, partitions []streams.TopicPartition) (map[streams.TopicPartition]int64, error)
}

// brokerLagEvery bounds how often a deployment's broker lag is read;
// brokerLagTimeout how long a reading may take.
const (
	brokerLagEvery   = time.Second
	brokerLagTimeout = 2 * time.Second
)

// GroupLag is BrokerLag's CommittedLag with an admin client: the end
// offsets (last stable offsets when readCommitted) less group's committed
// offsets, or less the log start offsets of the partitions it committed
// nothing on (it starts there: Braid's groups reset to the earliest).
func GroupLag(ctx context.Context, adm *kadm.Client, group string, readCommitted bool, partitions []streams.TopicPartition) (map[streams.TopicPartition]int64, error) {
	topics := make(map[string]bool)
	for _, tp := range partitions {
		topics[tp.Topic] = true
	}
	names := slices.Sorted(maps.Keys(topics))
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetching the committed offsets of group %q: %w", group, err)
	}
	list := adm.ListEndOffsets
	if readCommitted {
		list = adm.ListCommittedOffsets
	}
	ends, err := list(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("listing the end offsets of %v: %w", names, err)
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("listing the start offsets of %v: %w", names, err)
	}
	out := make(map[streams.TopicPartition]int64, len(partitions))
	for _, tp := range partitions {
		end, ok := ends.Lookup(tp.Topic, tp.Partition)
		if !ok || end.Err != nil {
			continue
		}
		from := int64(-1)
		if c, ok := committed.Lookup(tp.Topic, tp.Partition); ok && c.Err == nil && c.At >= 0 {
			from = c.At
		} else if s, ok := starts.Lookup(tp.Topic, tp.Partition); ok && s.Err == nil {
			from = s.Offset
		}
		if from >= 0 {
			out[tp] = max(0, end.Offset-from)
		}
	}
	return out, nil
}

// failedPartitions are the input partitions of the tasks d's failed
// instances (as last sampled) held when they failed, nil when there are none or their lag
// was read less than brokerLagEvery before now. The Monitor's mu is held.
func (d *deployment) failedPartitions(now time.Time) []streams.TopicPartition {
	if now.Sub(d.brokerLagAt) < brokerLagEvery {
		return nil
	}
	seen := map[streams.TopicPartition]bool{}
	for _, in := range d.instances {
		if !in.sampled || in.info.State != streams.InstanceFailed {
			continue
		}
		for _, parts := range in.failed {
			for _, tp := range parts {
				seen[tp] = true
			}
		}
	}
	if len(seen) == 0 {
		return nil
	}
	d.brokerLagAt = now
	return slices.Collect(maps.Keys(seen))
}

// readBrokerLag reads the lag of partitions through src, when it can
// tell; nil when it cannot.
func readBrokerLag(src Source, info DeploymentInfo, partitions []streams.TopicPartition) map[streams.TopicPartition]int64 {
	bl, ok := src.(BrokerLag)
	if !ok || len(partitions) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), brokerLagTimeout)
	defer cancel()
	lags, err := bl.CommittedLag(ctx, info.ApplicationID, info.Guarantee == streams.ExactlyOnce.String(), partitions)
	if err != nil {
		return nil // the last reading stands; the next tries again
	}
	return lags
}

// failedTask is a task a failed instance held, which no running instance
// has taken over, and its lag from the broker (-1 unknown).
type failedTask struct {
	id  streams.TaskID
	lag int64
}

// failedTasks are in's failed tasks that no instance of the sample runs
// (active), with their lags as last read from the broker.
func (d *deployment) failedTasks(in *instanceState, taken map[streams.TaskID]bool) []failedTask {
	var out []failedTask
	for _, id := range slices.SortedFunc(maps.Keys(in.failed), compareTasks) {
		if taken[id] {
			continue
		}
		lag, known := int64(0), false
		for _, tp := range in.failed[id] {
			if l, ok := d.brokerLag[tp]; ok {
				lag, known = lag+l, true
			}
		}
		if !known {
			lag = -1
		}
		out = append(out, failedTask{id: id, lag: lag})
	}
	return out
}

func compareTasks(x, y streams.TaskID) int {
	if x.Subtopology != y.Subtopology {
		return x.Subtopology - y.Subtopology
	}
	return int(x.Partition - y.Partition)
}

// Package streams is Braid's stream-processing engine: a builder DSL close to
// Kafka Streams' that describes a topology, and an App that runs it as tasks
// in a Kafka consumer group.
//
// A topology is a graph of sources, processors and sinks. Build splits it
// into sub-topologies at repartition topics; at run time each sub-topology
// becomes one task per input partition, named "<subtopology>_<partition>".
// A task takes the record with the lowest timestamp next from its input
// partitions and tracks its stream time, the largest timestamp it has seen.
// While one of its partitions is empty here but not on the broker it waits
// for the fetch, and Config.MaxTaskIdle more for one that is caught up, so
// that a lagging input does not let stream time run ahead of it (task
// idling, as Kafka Streams' max.task.idle.ms; TaskStats says what a task
// waits for).
//
// An App is one member of the application's consumer group (the group id is
// the application id). Start as many Apps, in as many processes or machines,
// as you like: the group's assignor spreads the tasks over them and moves
// them when members come and go. Every Config.CommitInterval the App flushes
// what it produced and then commits the offsets of what it processed, so a
// record is never lost: after a failure it may be processed again
// (at-least-once, the default).
//
// Under Config.ProcessingGuarantee ExactlyOnce each commit interval is one
// Kafka transaction carrying the outputs, the changelog records and the
// input offsets; every reader of the App reads committed records only; and
// local state is transactional: a store applies the writes of a
// transaction to pebble, with its changelog offset and stream time, only
// once the transaction committed. A crash at any point therefore leaves
// each store exactly at a commit it can restore forward from, never one it
// must wipe (the crash points are documented in eos.go). Emit-final
// windows emit each result once across crashes.
//
// Windowed aggregations (GroupedStream.WindowedBy) run on stream time, with
// no watermarks: a window closes when its task's stream time reaches its end
// plus its grace period, and a record for a closed window is late: dropped,
// counted and reported. Window and session stores are segmented by time in
// pebble and logged to compact,delete changelogs; a task's stream time is
// stored with its state and in its windowed changelogs, so windows neither
// reopen nor close twice after a restart or a move.
//
// Joins follow Kafka Streams 3.x: a stream joins a table's current row
// (Stream.JoinTable), two tables join into a table that changes with
// either (Table.Join), and two streams join within JoinWindows
// (Stream.Join), each side buffered in a logged window store, so that
// records out of order still join the partners the other side buffers;
// left and outer stream-stream joins emit a record that met no partner
// only once its window has closed. Joined inputs must be co-partitioned: Build
// repartitions an input whose key may have changed, and an App refuses to
// start on joined topics with different partition counts
// (CopartitionError).
//
// High availability follows Kafka Streams' design, on the classic group
// protocol with Braid's own balancer. Each member tells the leader which
// task state it holds (checkpointed changelog offsets); the leader puts
// each active task on a member that is caught up on its state
// (Config.AcceptableRecoveryLag), keeps Config.StandbyReplicas hot standby
// replicas of every stateful task on other members (on other racks when
// Config.RackTags say so), and places warm-up replicas where an active
// should move, moving it in a probing rebalance once the warm-up caught
// up. A standby applies its task's changelogs as they are written, so a
// failover replays only what the standby had not applied yet. Rebalances
// are cooperative by default (Config.RebalanceProtocol): only the tasks
// that move between instances stop, revoked in one rebalance and assigned
// in a follow-up one, and the tasks that stay go on processing. Under the
// eager protocol a rebalance suspends every task rather than closing it: a
// task that stays keeps its open stores. Either way a task that leaves
// becomes a standby when the plan says so. The state directory of a task
// that left for good (neither active nor a replica here) is deleted once
// it has not been owned here for Config.StateCleanupDelay (10 minutes, as
// Kafka Streams' state.cleanup.delay.ms); Stats.StateDirsCleaned counts
// them.
//
// Each App with stores locks <StateDir>/<ApplicationID>: a second instance
// given the same StateDir stops with a *StateDirInUseError. Two instances with the
// same InstanceID but their own state dirs run side by side under
// at-least-once, unless Config.StaticMembership ties the member to its
// id; under exactly-once they share a transactional id, fence each
// other, and one stops with a *FencedError naming the instance.
//
// With Config.StaticMembership and an explicit InstanceID an instance is
// a static group member (KIP-345): Close keeps its membership, and the
// instance started again within SessionTimeout, with the same InstanceID
// and StateDir, gets its tasks back without a rebalance, restoring only
// the changelog tail past its checkpoints; CloseAndLeave removes it from
// the group at once (see static.go).
//
// A Supervisor runs several instances in one process and can crash, stop
// (a static member leaves, as CloseAndLeave), start and add them; it
// measures each moved task's detection, recovery and downtime (see
// FailoverHook). An instance it sees die (crashed, or failed) it removes
// from the group at once, and under exactly-once it fences the instance's
// transactional id, aborting its open transaction: the group rebalances
// without waiting for the session timeout, and read-committed readers of
// the sinks without waiting for the transaction timeout (see
// FailoverEvent.DetectedBy).
//
// Stores answer interactive queries with what the last commit applied
// (Get, Range, FetchWindows, ...). QueryMetadata says which member holds
// a key, with the Config.ApplicationServer it advertised, and LookupKey
// reads it from this instance's copy, a standby's if asked for stale
// reads; a Runner with an ApplicationServer serves its instances' stores
// over HTTP there (package runtime/storeserver), routing each lookup to
// the key's owner.
//
// Everything the App does is observable through hooks (see Hook), and Stats
// returns a copy of its current state. The runtime imports franz-go, the
// standard library and its own packages only; the designer, the compiler and the web server are
// built on top of it, and exported Go programs use exactly this API.
package streams

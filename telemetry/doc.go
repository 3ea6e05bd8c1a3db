// Package telemetry carries what the monitor learns of an application
// through Kafka, so that a server watches instances it does not run: an
// exported program, `braid run` on another machine, a pod of a
// StatefulSet. It owns the telemetry topic's records, the Publisher that
// writes them beside an application and the Reader that turns them back
// into a monitor's deployment.
//
// A Publisher goes into the application's process. Its hook queues the
// runtime's events (the frequent ones, stream time, restore progress and
// standby progress, coalesced to their latest per task and store), and
// every Interval (250 ms: at most four a second) it writes one record
// keyed "<application id>/<process>" holding the state of each instance
// of the process (streams.InstanceInfo, the open windows of the windowed
// stores) and the events queued since. It never waits for the broker:
// a report that does not fit the producer's small buffer is dropped and
// counted, and so are events past the queue's bound. A slow or absent
// server costs an instance nothing, since the server reads the topic at
// its own pace.
//
// A Reader reads the topic from a minute back and, per application,
// registers a deployment with the monitor whose Source is the latest
// report of each process, and replays the reported events into the
// deployment's hook. The monitor then shows the application as it shows
// one the server runs: the live page's model, `braid watch` and /metrics.
//
// A process that stops reporting is gone after ReaderConfig.GoneAfter:
// its instances are shown crashed, with the time of their last report.
// Its tasks move when the group notices, which nobody in the process can
// report, so the Reader measures that failover itself: when another
// process's instance is assigned and resumes a task whose previous owner
// is gone (or stopped, or crashed under its own Supervisor), it reports a
// FailoverEvent from the report times, with the failure at the last
// report of the dead process (at most one interval before the death).
// Failovers between instances of one process are the process's own
// Supervisor's to report, and come through with its events.
//
// Times in a report are the process's clock. Detection measured across
// machines includes their clock skew.
package telemetry

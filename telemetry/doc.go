// Package telemetry turns the telemetry topic back into what the monitor
// shows, so that a server watches instances it does not run: an exported
// program, `braid run` on another machine, a pod of a StatefulSet. The
// processes write the topic with the runtime's Publisher (package
// github.com/braidstream/braid/runtime/telemetry, which owns the
// records' format); this package owns the Reader, which reads them, and
// the failovers it measures between processes.
//
// A Reader reads the topic from a minute back and, per application,
// registers a deployment with the monitor whose Source is the latest
// report of each process, described by the monitor.DeploymentInfo it
// makes of the reports' Deployment, and replays the reported events into
// the deployment's hook. The monitor then shows the application as it
// shows one the server runs: the live page's model, `braid watch` and
// /metrics.
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

// Package process runs a topology as the operating-system process of
// instances of its application, as `braid run` and the programs
// `braid export` writes do, so that the two cannot drift: the same
// flags (DefineFlags), the same instances (a streams.Runner), the same
// reports on the telemetry topic (a telemetry.Publisher), and the same
// commands carried out from the control topic (a control.Listener).
//
// A crash command for the process's only instance exits the process at
// once with CrashExitCode (3), with no leave, flush or commit, so that
// the failover is real and the orchestrator restarts the process; with
// several instances, the one crashes under the process's Supervisor.
// Stop and start stop an instance gracefully and start it again.
package process

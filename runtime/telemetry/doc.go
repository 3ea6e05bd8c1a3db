// Package telemetry is the process side of Braid's telemetry topic: what
// a process that runs instances of an application (braid run, a program
// braid export wrote, a Go program of your own) writes there, so that a
// server elsewhere (braid serve) shows and measures instances it does not
// run. It owns the topic's records (Report, the one definition of their
// format, which readers decode), the topic's name and creation
// (DefaultTopic, EnsureTopic) and the Publisher.
//
// A Publisher goes into the application's process. Its Hook queues the
// runtime's events (the frequent ones, stream time, restore progress,
// standby progress and commits, coalesced to their latest per task and
// store), and every Interval (250 ms: at most four a second) it writes
// one Report keyed "<application id>/<process>" holding the state of
// each instance of the process (streams.InstanceInfo, the open windows
// of the windowed stores) and the events queued since, with the
// Deployment that describes the application. It never waits for the
// broker: a report that does not fit the producer's small buffer is
// dropped and counted, and so are events past the queue's bound. A slow
// or absent server costs an instance nothing, since the server reads the
// topic at its own pace.
//
// Reading the topic back into a monitor (braid's package telemetry)
// decodes each Report, shows its instances (Instance.Info) and replays
// its events into a hook of its own (Event.Replay). Times in a report are
// the process's clock.
//
// Package github.com/braidstream/braid/runtime/process runs a Publisher
// beside a streams.Runner, as braid run does.
package telemetry

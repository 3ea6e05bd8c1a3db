// Package monitor watches running deployments of streams topologies: it
// implements the runtime's hooks, keeps the live state of every
// deployment, instance and task and a bounded log of what happened, and
// fans both out to subscribers (the web server's websockets, `braid
// watch`) without ever slowing the runtime. Its Collector exports
// Prometheus metrics read from that state when scraped, so that metrics
// add nothing per record.
//
// A Monitor learns about a deployment in two ways. The hook that
// AddDeployment returns goes into the deployment's streams.Config.Hooks:
// the runtime calls it from its processing goroutines, so every hook
// method only takes a mutex briefly, updates counters, appends to the
// event log and hands the event to each subscriber's bounded queue.
// Run samples the deployment's Source (a streams.Supervisor) every
// PublishInterval for what hooks do not carry (processed counts, lags,
// open windows, replicas) and publishes a snapshot. Each node's rates
// come twice: smoothed over about a second (NodeRate's In and Out) and
// averaged over Options.RateWindow, 20 s by default (InAvgPerSec,
// OutAvgPerSec, from a short series of the node's counts per sample,
// rates.go): a windowed aggregation emitting on window close sends
// bursts, and only the average reads what flows.
//
// Each deployment's events that tell of a failover (instances crashed,
// stopped or added, rebalances, tasks assigned, revoked and resumed,
// restores, standby promotions, tasks failed over) are also folded into
// a FailoverTimeline per failover, a lane of phases per moved task and
// per instance (timeline.go): the snapshot carries the last 20, and
// Timelines renders them on demand.
//
// Each snapshot also says, per running instance, what losing it now would
// do (Instance.Risk, risk.go): whether every active task has a caught-up
// replica elsewhere, and each task's projected downtime. A failover of a
// crash keeps the projection made before it (Failover.ProjectedDowntimeMs).
//
// With Options.History, Run also records each deployment's events and one
// snapshot a second on disk, bounded (history.go), and New reads them back:
// a restarted server shows the recent failovers, and SnapshotAt gives a
// deployment as it was at a past moment (replay.go).
//
// Subscribers never block the Monitor: a subscriber that does not read
// keeps at most one pending snapshot, the newest, and a bounded queue of
// events whose oldest are dropped and counted when it is full; the next
// message it reads is then a snapshot whose MissedEvents says how many.
//
// Messages, snapshots and events are JSON contracts (see their tags).
// Snapshots and events handed out are shared between subscribers and
// must be treated as read-only.
package monitor

package monitor

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// Monitor keeps the live state of deployments and a bounded event log,
// and fans both out to subscribers. Its methods are safe for concurrent
// use.
type Monitor struct {
	opts Options

	// mu guards everything below. Hooks hold it briefly; nothing holding
	// it calls into a Source or blocks. Lock order: mu, then a
	// Subscriber's mu.
	mu   sync.Mutex
	deps []*deployment
	log  ring
	seq  uint64
	subs map[*Subscriber]struct{}
	// pending are the events Run has yet to write to the History (at
	// most pendingEvents, the oldest dropped and counted in dropped);
	// restored the History's events of each deployment not added since
	// the Monitor began, for AddDeployment to seed its failovers with.
	pending  []entry
	dropped  int64
	restored map[string][]Event

	// latest is the last snapshot Run published, nil before the first.
	latest atomic.Pointer[Snapshot]
}

// New returns a Monitor. Run samples and publishes; without Run, hooks,
// events and Snapshot still work, with the sampled parts empty.
func New(opts Options) *Monitor {
	opts = opts.withDefaults()
	m := &Monitor{opts: opts, log: newRing(opts.EventLogSize), subs: make(map[*Subscriber]struct{})}
	m.restore()
	return m
}

// AddDeployment registers a deployment sampled from src and returns the
// hook to put in its streams.Config.Hooks. A deployment with the same ID
// is replaced.
func (m *Monitor) AddDeployment(info DeploymentInfo, src Source) streams.Hook {
	if info.CommitIntervalMs == 0 {
		info.CommitIntervalMs = info.CommitInterval.Milliseconds()
	}
	if info.SessionTimeoutMs == 0 {
		info.SessionTimeoutMs = info.SessionTimeout.Milliseconds()
	}
	if info.Started.IsZero() {
		info.Started = time.Now()
	}
	info = info.WithTopology()
	d := newDeployment(info, src)
	d.rateWindow = m.opts.RateWindow
	m.mu.Lock()
	defer m.mu.Unlock()
	d.seed(m.restored[info.ID])
	delete(m.restored, info.ID)
	if i := m.indexLocked(info.ID); i >= 0 {
		m.deps[i].removed = true
		m.deps[i] = d
	} else {
		m.deps = append(m.deps, d)
	}
	msg := fmt.Sprintf("deployment %s added", info.ID)
	if info.DesignName != "" {
		msg += fmt.Sprintf(": %s revision %d", info.DesignName, info.Revision)
	}
	if info.Instances > 0 {
		msg += fmt.Sprintf(", %d instances", info.Instances)
	}
	if info.Standbys > 0 {
		msg += fmt.Sprintf(", %d standbys", info.Standbys)
	}
	m.emitLocked(time.Now(), entry{ev: Event{Deployment: info.ID, Kind: kindDeploymentAdded, Message: msg,
		Detail: DeploymentAddedDetail{Design: info.Design, Revision: info.Revision, ApplicationID: info.ApplicationID,
			Instances: info.Instances, Standbys: info.Standbys, Guarantee: info.Guarantee}}})
	return &hook{m: m, d: d}
}

// RemoveDeployment forgets a deployment, keeping a "deployment-removed"
// event. Its hook does nothing from then on.
func (m *Monitor) RemoveDeployment(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.indexLocked(id)
	if i < 0 {
		return
	}
	m.deps[i].removed = true
	m.deps = slices.Delete(m.deps, i, i+1)
	m.emitLocked(time.Now(), entry{ev: Event{Deployment: id, Kind: kindDeploymentRemoved, Message: "deployment " + id + " removed"}})
}

// InstanceEvent records what the deployer did to an instance: kind is
// "crashed", "crash-wiped" (crashed, its state dir deleted, and started
// again), "stopped", "started" or "added"; the event's kind is
// "instance-" + kind.
func (m *Monitor) InstanceEvent(deployment, instance, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.emitLocked(time.Now(), entry{ev: Event{Deployment: deployment, Instance: instance, Kind: "instance-" + kind,
		Message: "instance " + instance + " " + kind}})
}

// Snapshot returns the current state of every deployment: the last
// sample with the hooks' news since.
func (m *Monitor) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.snapshotLocked(time.Now())
}

// Timelines returns a deployment's failover timelines (the last 20,
// newest last) as they stand now, and false when the monitor has no such
// deployment.
func (m *Monitor) Timelines(deployment string) ([]FailoverTimeline, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.indexLocked(deployment)
	if i < 0 {
		return nil, false
	}
	return m.deps[i].timelines.render(time.Now().UnixMilli()), true
}

// Events returns the logged events with Seq > since, oldest first.
func (m *Monitor) Events(since uint64) []Event {
	m.mu.Lock()
	var entries []entry
	m.log.each(func(e *entry) {
		if e.ev.Seq > since {
			entries = append(entries, *e)
		}
	})
	m.mu.Unlock()
	out := make([]Event, len(entries))
	for i := range entries {
		out[i] = entries[i].render()
	}
	return out
}

func (m *Monitor) indexLocked(id string) int {
	return slices.IndexFunc(m.deps, func(d *deployment) bool { return d.info.ID == id })
}

// emitLocked numbers an event, logs it and queues it for every
// subscriber.
func (m *Monitor) emitLocked(now time.Time, e entry) {
	m.seq++
	e.ev.Seq, e.ev.Time = m.seq, now.UnixMilli()
	m.log.push(e)
	m.keepLocked(e)
	if timelineKinds[e.ev.Kind] {
		if i := m.indexLocked(e.ev.Deployment); i >= 0 {
			m.deps[i].timelines.add(e.render())
		}
	}
	for s := range m.subs {
		s.push(&e)
	}
}

// snapshotLocked builds a snapshot of every deployment.
func (m *Monitor) snapshotLocked(now time.Time) *Snapshot {
	s := &Snapshot{Time: now.UnixMilli(), Deployments: make([]Deployment, 0, len(m.deps))}
	for _, d := range m.deps {
		s.Deployments = append(s.Deployments, d.build(now))
	}
	return s
}

// entry is a logged event. The frequent kinds (window-closed, late-drop)
// keep their raw fields in win and are rendered, Task, Message and Detail,
// only when read; the others are complete in ev.
type entry struct {
	ev      Event
	task    streams.TaskID
	hasTask bool
	lazy    bool
	win     windowPayload
}

// windowPayload is the raw data of a window-closed or late-drop event.
type windowPayload struct {
	store, topic                            string
	start, end, closesAt, streamTime, grace int64
	timestamp, offset, suppressed           int64
	keys                                    int
	partition                               int32
	emitted, session                        bool
}

// render returns the event as subscribers and Events see it.
func (e *entry) render() Event {
	ev := e.ev
	if e.hasTask {
		ev.Task = e.task.String()
	}
	if !e.lazy {
		return ev
	}
	w := &e.win
	switch ev.Kind {
	case kindWindowClosed:
		ev.Message = fmt.Sprintf("window %s of %s closed at stream time %s, %d keys",
			windowString(w.start, w.end, w.session), w.store, clock(w.streamTime), w.keys)
		ev.Detail = WindowClosedDetail{Store: w.store, WindowStart: w.start, WindowEnd: w.end, ClosesAt: w.closesAt,
			StreamTime: w.streamTime, GraceMs: w.grace, Keys: w.keys, Emitted: w.emitted}
	case kindLateDrop:
		ev.Message = fmt.Sprintf("record at %s dropped: window %s of %s closed, stream time %s (%d ms behind)",
			clock(w.timestamp), windowString(w.start, w.end, w.session), w.store, clock(w.streamTime), w.streamTime-w.timestamp)
		if w.topic != "" {
			ev.Message += fmt.Sprintf(", from %s/%d@%d", w.topic, w.partition, w.offset)
		}
		if w.suppressed > 0 {
			ev.Message += fmt.Sprintf(" (and %d more late records not logged)", w.suppressed)
		}
		ev.Detail = LateDropDetail{Store: w.store, Timestamp: w.timestamp, StreamTime: w.streamTime,
			WindowStart: w.start, WindowEnd: w.end, Topic: w.topic, Partition: w.partition, Offset: w.offset, Suppressed: w.suppressed}
	}
	return ev
}

// clock formats a unix ms time of day in UTC, with milliseconds only when
// there are some.
func clock(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	if ms%1000 != 0 {
		return t.Format("15:04:05.000")
	}
	return t.Format("15:04:05")
}

// windowString writes a window's bounds: half-open for time windows,
// closed for sessions, whose ends are inclusive.
func windowString(start, end int64, session bool) string {
	if session {
		return "[" + clock(start) + ", " + clock(end) + "]"
	}
	return "[" + clock(start) + ", " + clock(end) + ")"
}

// ring is a fixed-capacity queue of entries that drops its oldest when
// full.
type ring struct {
	buf        []entry
	head, size int
}

func newRing(capacity int) ring { return ring{buf: make([]entry, capacity)} }

// push appends e, dropping the oldest entry when full; it reports whether
// one was dropped.
func (r *ring) push(e entry) (dropped bool) {
	if len(r.buf) == 0 {
		return true
	}
	if r.size == len(r.buf) {
		r.buf[r.head] = e
		r.head = (r.head + 1) % len(r.buf)
		return true
	}
	r.buf[(r.head+r.size)%len(r.buf)] = e
	r.size++
	return false
}

// peek returns the oldest entry; the ring must not be empty.
func (r *ring) peek() *entry { return &r.buf[r.head] }

// pop removes the oldest entry and returns it.
func (r *ring) pop() entry {
	e := r.buf[r.head]
	r.buf[r.head] = entry{}
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return e
}

// each calls f for every entry, oldest first.
func (r *ring) each(f func(*entry)) {
	for i := range r.size {
		f(&r.buf[(r.head+i)%len(r.buf)])
	}
}

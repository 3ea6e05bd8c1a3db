package monitor

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

const (
	maxFailovers      = 50
	throughputPoints  = 300 // 5 minutes, one a second
	windowsPerStore   = 30
	rateTau           = time.Second // smoothing of the per-second rates
	lateEventsPerSec  = 5
	errorEventsPerSec = 5
)

// deployment is the state of one deployment: what the hooks told, and the
// last sample of its Source. The Monitor's mu guards it.
type deployment struct {
	info    DeploymentInfo
	src     Source
	removed bool

	// From the topology: the windowed stores (sampled for open windows),
	// each store's writer and type, and the sink nodes.
	windowed  []string
	storeNode map[string]string
	sessions  map[string]bool
	sinks     map[string]bool

	instances map[string]*instanceState
	// order lists the instances as the Source last did.
	order []string

	failovers      []Failover
	timelines      *timelines
	failoverCounts map[failoverKey]int64
	lastDowntime   map[string]int64 // by task
	late           map[storeKey]*lateStat
	snapshots      map[storeKey]*snapshotStat
	restoreSources map[restoreSource]int64

	// brokerLag is the lag of the failed instances' tasks' partitions,
	// as last read from the broker (lag.go), at brokerLagAt.
	brokerLag   map[streams.TopicPartition]int64
	brokerLagAt time.Time

	throughput []Point // a ring of throughputPoints
	tpHead     int
	pointAt    time.Time
	pointCount float64 // records processed since pointAt
	sampledAt  time.Time

	// nodeSeries holds each node's counts over the last rateWindow, for
	// its averaged rates (rates.go).
	rateWindow time.Duration
	nodeSeries map[string]*rateSeries

	// For the risk assessments (risk.go): the last rebalances' durations,
	// the last restore rate measured (records/s, 0 none), and each
	// instance's last assessments, the newest made from the sample taken
	// at assessedAt.
	rebalances  []time.Duration
	restoreRate float64
	risks       map[string][]riskAt
	assessedAt  time.Time
}

type failoverKey struct{ from, task string }

type storeKey struct {
	instance string
	task     streams.TaskID
	store    string
}

// lateStat counts the late records of one store of a task on an instance;
// lateness is stream time minus the last one's timestamp.
type lateStat struct{ drops, lateness int64 }

type instanceState struct {
	id string

	// Sampled.
	info    streams.InstanceInfo
	sampled bool
	windows map[streams.TaskID][]Window

	// From hooks.
	rebalanceFrom time.Time
	lastCommit    time.Time
	commitTook    time.Duration
	errors        limiter
	tasks         map[streams.TaskID]*taskState
	replicas      map[streams.TaskID]map[string]bool // stores followed, from the standby hooks
	// held are the active tasks the instance holds, with their input
	// partitions (assigned, not revoked); failed those it held when it
	// last failed (lag.go), and failedNow those of them that no running
	// instance has taken over, as the last sample found them.
	held      map[streams.TaskID][]streams.TopicPartition
	failed    map[streams.TaskID][]streams.TopicPartition
	failedNow []failedTask
}

type taskState struct {
	// From hooks.
	streamTime int64 // -1 unknown
	lateDrops  int64
	late       limiter
	restores   map[string]*restoreState

	// assignedAt is when the task last arrived on the instance.
	assignedAt time.Time

	// Sampled: the previous counts and the smoothed rates.
	active        bool
	prevProcessed int64
	inRate        float64
	outRate       float64
	nodes         map[string]*nodeState
}

type nodeState struct {
	prevIn, prevOut int64
	in, out         float64
}

// restoreState is one store's restore in progress.
type restoreState struct {
	start, end, restored int64
	rate                 float64
	// load is the snapshot the store was loaded from, and those skipped.
	load SnapshotLoad
	// told is when a restore-progress event last told of it.
	told time.Time
}

// limiter lets at most n events a second through and counts the others.
type limiter struct {
	windowStart int64 // unix ms
	n           int
	suppressed  int64
}

// allow reports whether an event may be logged at now (unix ms); when it
// may, suppressed is how many were not since the last one logged.
func (l *limiter) allow(now int64, max int) (ok bool, suppressed int64) {
	if now-l.windowStart >= 1000 || now < l.windowStart {
		l.windowStart, l.n = now, 0
	}
	if l.n >= max {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

func newDeployment(info DeploymentInfo, src Source) *deployment {
	d := &deployment{info: info, src: src, storeNode: map[string]string{}, sessions: map[string]bool{}, sinks: map[string]bool{},
		instances: map[string]*instanceState{}, failoverCounts: map[failoverKey]int64{}, lastDowntime: map[string]int64{},
		late: map[storeKey]*lateStat{}, snapshots: map[storeKey]*snapshotStat{}, restoreSources: map[restoreSource]int64{},
		timelines: newTimelines(info.SessionTimeoutMs)}
	for _, st := range info.Stores {
		d.storeNode[st.Name] = st.Processor
		// A join's buffers have no windows to sample.
		if (st.Type == "window" || st.Type == "session") && !st.Join {
			d.windowed = append(d.windowed, st.Name)
		}
		d.sessions[st.Name] = st.Type == "session"
	}
	for _, name := range info.SinkNodes {
		d.sinks[name] = true
	}
	return d
}

func (d *deployment) instance(id string) *instanceState {
	in := d.instances[id]
	if in == nil {
		in = &instanceState{id: id, tasks: map[streams.TaskID]*taskState{}, replicas: map[streams.TaskID]map[string]bool{}}
		d.instances[id] = in
	}
	return in
}

func (in *instanceState) task(id streams.TaskID) *taskState {
	t := in.tasks[id]
	if t == nil {
		t = &taskState{streamTime: -1}
		in.tasks[id] = t
	}
	return t
}

// sample is what Run read from a deployment's Source, outside the lock.
type sample struct {
	d         *deployment
	instances []streams.InstanceInfo
	// windows holds, per instance, the open windows of each windowed
	// store.
	windows map[string]map[string][]streams.OpenWindow
	// busy holds the instances whose windows could not be read: their
	// queries gave up waiting (streams.StoreBusyError).
	busy map[string]bool
	// brokerLag is the lag of the failed instances' tasks' partitions
	// read from the broker, nil when none was read.
	brokerLag map[streams.TopicPartition]int64
}

// take reads d's Source. The caller must not hold the Monitor's mu:
// src's methods may wait for the runtime, whose hooks take it. The
// instances are read at once, each on its own goroutine: a query waits up
// to a second for an instance whose commit waits on an absent broker, and
// one such instance must not hold up the others' sample.
func take(d *deployment, src Source, windowed []string) sample {
	s := sample{d: d, instances: src.Instances(), windows: map[string]map[string][]streams.OpenWindow{}, busy: map[string]bool{}}
	if len(windowed) == 0 {
		return s
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, info := range s.instances {
		if info.State != streams.InstanceRunning {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			byStore, busy := openWindows(src, info.ID, windowed)
			mu.Lock()
			s.windows[info.ID], s.busy[info.ID] = byStore, busy
			mu.Unlock()
		}()
	}
	wg.Wait()
	return s
}

// openWindows reads the open windows of an instance's windowed stores,
// leaving out those it cannot read. It stops at the first query that gave
// up waiting for the instance (the others would too) and says so: apply
// then keeps what it last read of the instance.
func openWindows(src Source, instance string, windowed []string) (byStore map[string][]streams.OpenWindow, busy bool) {
	byStore = map[string][]streams.OpenWindow{}
	for _, store := range windowed {
		ws, err := src.OpenWindows(instance, store)
		if be := (*streams.StoreBusyError)(nil); errors.As(err, &be) {
			return byStore, true
		}
		if err == nil {
			byStore[store] = ws
		}
	}
	return byStore, false
}

// apply folds a sample taken at now into d: the instances' stats, the
// tasks' rates, the open windows and the throughput.
func (d *deployment) apply(now time.Time, s sample) {
	dt, prev := 0.0, d.sampledAt
	if !prev.IsZero() {
		dt = now.Sub(prev).Seconds()
	}
	d.sampledAt = now
	alpha := 1 - math.Exp(-dt/rateTau.Seconds())
	smooth := func(rate *float64, delta int64) {
		if dt > 0 {
			*rate += alpha * (float64(delta)/dt - *rate)
		}
	}
	var processed, lag int64
	nodeCounts := map[string][2]int64{}
	if s.brokerLag != nil {
		d.brokerLag = s.brokerLag
	}
	// The tasks some running instance holds: a failed instance's tasks
	// that one took over are its.
	taken := map[streams.TaskID]bool{}
	for _, info := range s.instances {
		if info.State == streams.InstanceRunning {
			for _, ts := range slices.Concat(info.Stats.Tasks, info.Stats.Suspended) {
				taken[ts.ID] = true
			}
		}
	}
	d.order = d.order[:0]
	for _, info := range s.instances {
		d.order = append(d.order, info.ID)
		in := d.instance(info.ID)
		in.info, in.sampled = info, true
		running := info.State == streams.InstanceRunning
		if !running {
			in.rebalanceFrom = time.Time{}
			in.replicas = map[streams.TaskID]map[string]bool{}
		}
		in.failedNow = nil
		if info.State == streams.InstanceFailed {
			in.failedNow = d.failedTasks(in, taken)
			for _, ft := range in.failedNow {
				lag += max(0, ft.lag)
			}
		}
		active := make(map[streams.TaskID]bool, len(info.Stats.Tasks))
		for _, ts := range info.Stats.Tasks {
			active[ts.ID] = true
			t := in.task(ts.ID)
			// fresh: arrived since the last sample, so that everything it
			// counted is new; otherwise a task seen for the first time only
			// sets the baseline.
			fresh := !t.active && !prev.IsZero() && !t.assignedAt.Before(prev)
			counting := t.active || fresh
			if counting {
				delta := ts.Processed - t.prevProcessed
				if fresh || delta < 0 { // a new life of the task counts from zero
					delta = ts.Processed
				}
				processed += delta
				smooth(&t.inRate, delta)
			}
			t.prevProcessed = ts.Processed
			if tl := taskLag(ts); tl > 0 {
				lag += tl
			}
			if t.nodes == nil {
				t.nodes = map[string]*nodeState{}
			}
			t.outRate = 0
			for _, ns := range ts.Nodes {
				n := t.nodes[ns.Name]
				if n == nil {
					n = &nodeState{}
					if !counting {
						n.prevIn, n.prevOut = ns.In, ns.Out
					}
					t.nodes[ns.Name] = n
				}
				if counting {
					dIn, dOut := ns.In-n.prevIn, ns.Out-n.prevOut
					if dIn < 0 || dOut < 0 {
						dIn, dOut = ns.In, ns.Out
					}
					smooth(&n.in, dIn)
					smooth(&n.out, dOut)
					c := nodeCounts[ns.Name]
					nodeCounts[ns.Name] = [2]int64{c[0] + dIn, c[1] + dOut}
				}
				n.prevIn, n.prevOut = ns.In, ns.Out
				if d.sinks[ns.Name] {
					t.outRate += n.in
				}
			}
			t.active = true
		}
		for _, ts := range info.Stats.Suspended {
			// Still this instance's, it processes nothing meanwhile; its
			// counts go on from where they stopped if it resumes.
			active[ts.ID] = true
			t := in.task(ts.ID)
			t.inRate, t.outRate = 0, 0
			for _, n := range t.nodes {
				n.in, n.out = 0, 0
			}
		}
		for id, t := range in.tasks {
			if !active[id] {
				t.active, t.inRate, t.outRate, t.nodes = false, 0, 0, nil
				if !running {
					t.restores = nil
				}
			}
		}
		if s.busy[info.ID] {
			continue // its windows as last read
		}
		in.windows = map[streams.TaskID][]Window{}
		for _, store := range d.windowed {
			ws := s.windows[info.ID][store]
			byTask := map[streams.TaskID][]streams.OpenWindow{}
			for _, w := range ws {
				byTask[w.Task] = append(byTask[w.Task], w)
			}
			for id, ws := range byTask {
				// The newest windowsPerStore, oldest first.
				slices.SortFunc(ws, func(x, y streams.OpenWindow) int {
					if x.Start != y.Start {
						return cmp.Compare(x.Start, y.Start)
					}
					return cmp.Compare(x.End, y.End)
				})
				if len(ws) > windowsPerStore {
					ws = ws[len(ws)-windowsPerStore:]
				}
				for _, w := range ws {
					in.windows[id] = append(in.windows[id], Window{Store: store, Start: w.Start, End: w.End, ClosesAt: w.ClosesAt, Keys: w.Keys})
				}
			}
		}
	}
	if !prev.IsZero() {
		d.addNodeCounts(now, nodeCounts, d.rateWindow)
	}
	// One throughput point per wall-clock second.
	d.pointCount += float64(processed)
	switch {
	case d.pointAt.IsZero():
		d.pointAt = now
	case now.Unix() != d.pointAt.Unix():
		p := Point{Time: now.UnixMilli(), Lag: lag}
		if el := now.Sub(d.pointAt).Seconds(); el > 0 {
			p.RecordsPerSec = d.pointCount / el
		}
		d.addPoint(p)
		d.pointAt, d.pointCount = now, 0
	}
}

func (d *deployment) addPoint(p Point) {
	if len(d.throughput) < throughputPoints {
		d.throughput = append(d.throughput, p)
		return
	}
	d.throughput[d.tpHead] = p
	d.tpHead = (d.tpHead + 1) % throughputPoints
}

// taskLag sums a task's known partition lags, -1 when none is known.
func taskLag(ts streams.TaskStats) int64 {
	lag, known := int64(0), false
	for _, p := range ts.Partitions {
		if p.Lag >= 0 {
			lag, known = lag+p.Lag, true
		}
	}
	if !known {
		return -1
	}
	return lag
}

// InstanceStateName is the Instance.State of a sampled instance.
func InstanceStateName(info streams.InstanceInfo) string {
	if info.State == streams.InstanceRunning && info.Stats.State == streams.Rebalancing {
		return "rebalancing"
	}
	return info.State.String()
}

// build returns the deployment's snapshot at now.
func (d *deployment) build(now time.Time) Deployment {
	out := Deployment{DeploymentInfo: d.info, Instances: make([]Instance, 0, len(d.order)), Nodes: map[string]NodeRate{},
		Failovers: slices.Clone(d.failovers), Timelines: d.timelines.render(now.UnixMilli()), Throughput: make([]Point, 0, len(d.throughput)), RateWindowMs: d.rateWindow.Milliseconds()}
	if out.Failovers == nil {
		out.Failovers = []Failover{}
	}
	out.Throughput = append(out.Throughput, d.throughput[d.tpHead:]...)
	out.Throughput = append(out.Throughput, d.throughput[:d.tpHead]...)
	for _, id := range d.order {
		in := d.instances[id]
		out.Instances = append(out.Instances, d.buildInstance(in, out.Nodes))
	}
	d.assess(&out)
	for name, s := range d.nodeSeries {
		nr := out.Nodes[name]
		nr.InAvgPerSec, nr.OutAvgPerSec = s.avg()
		out.Nodes[name] = nr
	}
	for k, l := range d.late {
		if node := d.storeNode[k.store]; node != "" {
			n := out.Nodes[node]
			n.LateDrops += l.drops
			out.Nodes[node] = n
		}
	}
	return out
}

// buildInstance returns in's snapshot and adds its tasks' node rates to
// nodes.
func (d *deployment) buildInstance(in *instanceState, nodes map[string]NodeRate) Instance {
	info := in.info
	out := Instance{ID: in.id, State: InstanceStateName(info), Since: info.Since.UnixMilli(), Server: info.Server, Tasks: []Task{},
		CommitMs: float64(in.commitTook.Microseconds()) / 1000}
	if out.State == "rebalancing" && !in.rebalanceFrom.IsZero() {
		out.Since = in.rebalanceFrom.UnixMilli()
	}
	if info.Err != nil {
		out.Error = info.Err.Error()
	}
	if !in.lastCommit.IsZero() {
		out.LastCommit = in.lastCommit.UnixMilli()
	}
	for _, b := range info.Stats.UnreachableBrokers {
		out.UnreachableBrokers = append(out.UnreachableBrokers, UnreachableBroker{Broker: b.Broker, Since: b.Since.UnixMilli(), Error: b.Err})
	}
	// An active task runs while its instance rebalances unless the
	// rebalance suspended it: the cooperative protocol suspends only the
	// tasks it takes away, the eager one all of them.
	for _, ts := range info.Stats.Tasks {
		t := in.task(ts.ID)
		task := Task{ID: ts.ID.String(), Role: "active", State: "running", StreamTime: max(ts.StreamTime, t.streamTime),
			InPerSec: t.inRate, OutPerSec: t.outRate, Processed: ts.Processed, Lag: taskLag(ts), LateDrops: t.lateDrops,
			Windows: in.windows[ts.ID], Suspensions: ts.Suspensions}
		if !ts.LastRecord.IsZero() {
			task.LastRecord = ts.LastRecord.UnixMilli()
		}
		if ts.Restoring {
			task.State = "restoring"
		}
		if r := t.restore(); r != nil {
			task.Restore = r
		}
		for name, n := range t.nodes {
			nr := nodes[name]
			nr.In += n.in
			nr.Out += n.out
			nodes[name] = nr
		}
		out.Tasks = append(out.Tasks, task)
	}
	for _, ts := range info.Stats.Suspended {
		task := Task{ID: ts.ID.String(), Role: "active", State: "suspended", StreamTime: ts.StreamTime, Processed: ts.Processed,
			Lag: -1, Windows: in.windows[ts.ID], Suspensions: ts.Suspensions}
		if t := in.tasks[ts.ID]; t != nil {
			task.StreamTime, task.LateDrops = max(ts.StreamTime, t.streamTime), t.lateDrops
		}
		if !ts.LastRecord.IsZero() {
			task.LastRecord = ts.LastRecord.UnixMilli()
		}
		out.Tasks = append(out.Tasks, task)
	}
	for _, ft := range in.failedNow {
		// A task the instance held when it failed, which no one runs:
		// its lag is the broker's.
		task := Task{ID: ft.id.String(), Role: "active", State: "failed", StreamTime: -1, Lag: ft.lag}
		if t := in.tasks[ft.id]; t != nil {
			task.StreamTime, task.LateDrops, task.Processed = t.streamTime, t.lateDrops, t.prevProcessed
		}
		out.Tasks = append(out.Tasks, task)
	}
	for _, sb := range info.Stats.Standbys {
		role := "standby"
		if sb.Warmup {
			role = "warmup"
		}
		task := Task{ID: sb.ID.String(), Role: role, State: role, StreamTime: -1, Lag: -1, StandbyLag: &StandbyLag{}}
		if t := in.tasks[sb.ID]; t != nil {
			task.LateDrops = t.lateDrops
		}
		for _, st := range sb.Stores {
			// A replica processes no input: its progress is the
			// changelog offset it has applied up to.
			task.Processed += st.Offset
			task.StandbyLag.Records += st.Lag
			task.StandbyLag.TimeMs = max(task.StandbyLag.TimeMs, st.TimeLag.Milliseconds())
		}
		out.Tasks = append(out.Tasks, task)
	}
	return out
}

// restore sums the task's restores in progress, nil when none is.
func (t *taskState) restore() *Restore {
	if len(t.restores) == 0 {
		return nil
	}
	r := &Restore{}
	for _, s := range t.restores {
		r.Restored += s.restored
		r.Total += s.end - s.start
		r.Rate += s.rate
	}
	r.SnapshotLoad = loads(t.restores)
	r.EtaMs = -1
	if r.Rate > 0 {
		r.EtaMs = int64(float64(max(0, r.Total-r.Restored)) / r.Rate * 1000)
	}
	return r
}

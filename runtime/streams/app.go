package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidstream/braid/runtime/internal/assign"
	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// State is the lifecycle state of an App, as in Kafka Streams.
type State int

const (
	// Created: New returned, Run not called yet.
	Created State = iota
	// Rebalancing: joining the group or waiting for an assignment.
	Rebalancing
	// Running: tasks assigned and processing.
	Running
	// PendingShutdown: Run's context ended or Close was called; the App
	// is committing and leaving the group.
	PendingShutdown
	// NotRunning: Run returned after a clean shutdown.
	NotRunning
	// Failed: Run returned an error.
	Failed
)

func (s State) String() string {
	switch s {
	case Created:
		return "CREATED"
	case Rebalancing:
		return "REBALANCING"
	case Running:
		return "RUNNING"
	case PendingShutdown:
		return "PENDING_SHUTDOWN"
	case NotRunning:
		return "NOT_RUNNING"
	case Failed:
		return "ERROR"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// App runs a Topology as one member of the application's consumer group.
type App struct {
	topo  *Topology
	cfg   Config
	log   *slog.Logger
	hooks hookSet
	// snaps takes and uploads store snapshots when Config.Snapshots is
	// on; nil otherwise.
	snaps *snapshotter

	// sources maps every real topic the App reads to its source node.
	sources map[string]*graphNode
	// replication of the topics the App creates: prepareTopics decides it once.
	replication *TopicReplication

	// client is set by startClient, and by the group callbacks, which
	// franz-go may call before NewClient has returned. produceCtx is set
	// before the client starts.
	client     atomic.Pointer[kgo.Client]
	produceCtx context.Context
	// givenUp is the group client recoverSession gave up, until it is
	// closed: its callbacks take no assignment up (see recoverSession).
	givenUp atomic.Pointer[kgo.Client]
	// promise is onProduced as a func value made once: a method value
	// built per record would allocate per record.
	promise func(*kgo.Record, error)
	// capture, when set, takes every produced record instead of a client:
	// the TestDriver's broker. tap, when set, sees every record an
	// operator forwards.
	capture func(r *kgo.Record, promise func(*kgo.Record, error))
	tap     func(TapRecord)

	// tasksMu guards the tasks. The processing goroutine holds it while it
	// processes and commits; franz-go's group callbacks, which run while
	// that goroutine waits in PollRecords (BlockRebalanceOnPoll), take it
	// to create, commit and drop tasks.
	tasksMu sync.Mutex
	tasks   map[TaskID]*task
	byTP    map[TopicPartition]*partitionQueue
	taskOf  map[TopicPartition]*task

	// suspended holds the tasks set aside by a rebalance until the new
	// assignment says which stay (see rebalance.go); onDisk the changelog
	// offset sums of task state left on disk but not open, for the
	// assignor; probe is the pending probing rebalance or rejoin
	// (scheduleRebalance). All under tasksMu.
	suspended map[TaskID]*task
	onDisk    map[TaskID]int64
	probe     *time.Timer
	// suspensions counts, per task, the rebalances that set it aside,
	// so that tests and the live view can tell that a cooperative
	// rebalance never stops a task that stays. Under tasksMu.
	suspensions map[TaskID]int
	// handedOver holds the tasks the last cooperative revocation gave up,
	// which the follow-up join still reports as this member's (see
	// heldState); revokedNow says the revocation came in the rebalance
	// whose assignment is arriving. Under tasksMu.
	handedOver map[TaskID]bool
	revokedNow bool
	// joins holds the periodic commit while a cooperative join is under
	// way (join_gate.go).
	joins joinGate
	// lastHeld is what heldState answers while tasksMu is busy, published
	// under tasksMu (publishHeld).
	lastHeld atomic.Pointer[heldTasks]
	// arriving, while not nil, is closed once the assignment onAssigned
	// left to finish after it returned (finishAssigned, while the stores
	// open) is taken up: the next rebalance callback and the shutdown
	// wait for it first.
	arriving atomic.Pointer[chan struct{}]

	// lastPurge is when committed repartition records were last deleted;
	// commit, which holds tasksMu, reads and sets it.
	lastPurge time.Time
	// tidy deletes the state of tasks that moved away (cleanup.go).
	tidy cleaner
	// dirLock holds <StateDir>/<ApplicationID> from start to shutdown:
	// only one App may open, and delete, the stores there.
	dirLock io.Closer

	// balancer is the group balancer; standby follows the changelogs of
	// this instance's standby and warm-up replicas.
	balancer *assign.Balancer
	standby  *standbys
	// reach tracks which brokers answer the App's clients.
	reach *reachability
	// static is what a static member replays after a restart (static.go).
	static staticState

	// clientCtx is the context of every Kafka client of the App; crash
	// cancels it, which cuts their connections without a goodbye: no
	// leave-group, no commit, no flush.
	clientCtx    context.Context
	clientCancel context.CancelFunc
	crashing     atomic.Bool

	// memberID and generation are this instance's group membership as it
	// last joined, kept after the client is closed so that a Supervisor
	// can remove the member of an instance that died (detect.go). Set by
	// the group callbacks and by crash.
	memberMu   sync.Mutex
	memberID   string
	generation int32

	// sessionCtx is the group client's own context, under clientCtx:
	// closeClient cancels it to cut the connections of a client whose
	// broker does not answer. The processing goroutine sets and cancels
	// it (startClient, closeClient).
	sessionCtx    context.Context
	sessionCancel context.CancelFunc

	// outageAt is when the current loss of the group session began (unix
	// ns), 0 when there is none: the outage is logged once when it begins
	// and once when the group assigned this instance again (recover.go).
	// lastFence is when the producer was last fenced; the processing
	// goroutine reads and sets it.
	outageAt  atomic.Int64
	lastFence time.Time
	// abandoned counts the times an at-least-once App gave up the
	// records its producer still held (abandonProduced): a commit that
	// sees it move while it flushes applies no store and commits no
	// offset.
	abandoned atomic.Uint64
	// unassignedSince is when the group client began to join (unix ns),
	// 0 once the group assigned this instance: a join that takes longer
	// than joinTimeout is given up (recover.go), and while it is set the
	// commit interval does not commit (join_gate.go). The processing
	// goroutine and the group callbacks set it.
	unassignedSince atomic.Int64

	// txn is set under ExactlyOnce (see eos.go). crashAt, set by tests
	// only, says whether to crash at a crash point of a commit.
	txn     *transactions
	crashAt func(point string) bool
	// beforeStoreOpen, set by tests only, is called as each store of a
	// task begins to open.
	beforeStoreOpen func()
	// markerWarn warns once that the broker refuses to say which
	// transactions hold a changelog back (markers.go).
	markerWarn sync.Once

	// finished holds the restorations that ended, for the processing
	// goroutine to resume their tasks; a restore goroutine appends and
	// never waits. waker cuts the goroutine's poll short when one ends.
	finishedMu sync.Mutex
	finished   []*restoration
	waker      pollWaker

	// idling is set once the App runs on a broker with task idling on
	// (Config.MaxTaskIdle; a TestDriver never idles). lister brings the
	// lags of partitions nothing was fetched of (idle.go); idleWake is
	// the next idle deadline of a waiting task, which ends the poll. The
	// processing goroutine sets and reads idleWake. lagStale, set by
	// tests only, replaces lagStaleAfter.
	idling   bool
	lister   idleLister
	idleWake time.Time
	lagStale time.Duration

	// asyncErr keeps the first error met off the processing goroutine: a
	// failed produce, or a store that would not open in a group callback.
	// It fails the App at the next check, before any commit could skip a
	// record.
	asyncErrMu sync.Mutex
	asyncErr   error

	// mu guards the lifecycle and the published stats, read by Stats and
	// Close from other goroutines.
	mu               sync.Mutex
	state            State
	stats            []TaskStats
	suspendedStats   []TaskStats
	stateDirsCleaned int64
	running          bool
	cancel           context.CancelFunc
	done             chan struct{}
}

// New checks cfg and returns an App for topo. It does not connect: Run
// does.
func New(topo *Topology, cfg Config) (*App, error) {
	if topo == nil {
		return nil, errors.New("creating app: topology is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("creating app: %w", err)
	}
	cfg = cfg.WithDefaults()
	a := &App{
		topo:      topo,
		cfg:       cfg,
		log:       cfg.Logger.With("app", cfg.ApplicationID, "instance", cfg.InstanceID),
		hooks:     newHookSet(cfg.Hooks),
		sources:   make(map[string]*graphNode),
		tasks:     make(map[TaskID]*task),
		suspended: make(map[TaskID]*task), suspensions: make(map[TaskID]int),
		onDisk: make(map[TaskID]int64),
		byTP:   make(map[TopicPartition]*partitionQueue),
		taskOf: make(map[TopicPartition]*task),
	}
	if cfg.ProcessingGuarantee == ExactlyOnce {
		a.txn = &transactions{}
	}
	a.clientCtx, a.clientCancel = context.WithCancel(context.Background())
	a.reach = newReachability(a)
	a.standby = newStandbys(a)
	a.balancer = a.newBalancer()
	a.promise = a.onProduced
	for _, n := range topo.nodes {
		if n.kind == sourceNode {
			for _, t := range n.topics {
				a.sources[a.realTopic(t, n.internal)] = n
			}
		}
	}
	return a, nil
}

// kc returns the App's franz-go client.
func (a *App) kc() *kgo.Client { return a.client.Load() }

// realTopic returns the name of a topic on the cluster: internal topics
// carry the application id.
func (a *App) realTopic(name string, internal bool) string {
	if internal {
		return a.cfg.ApplicationID + "-" + name
	}
	return name
}

// Run joins the group and processes until ctx ends or Close is called,
// then commits, leaves the group and returns nil. A commit the cluster
// cannot take then (the group rebalancing as other members stop, the
// broker gone) is logged and is no failure: nothing processed is lost,
// the next owner of a task resumes from its last commit (under
// at-least-once processing the records since then again, under
// exactly-once after the open transaction is aborted). While the broker is
// unreachable, or the group session is lost, it waits, gives its tasks up
// and joins again by itself (see recover.go). It returns an error when
// the topics are not usable, a task fails, or the cluster refuses what no
// retry heals (an *AuthorizationError, a *FencedError); processed offsets
// are committed first in every case, so nothing processed is lost. It
// never returns nil after a failure.
func (a *App) Run(ctx context.Context) error {
	ctx, err := a.begin(ctx)
	if err != nil {
		return err
	}
	defer a.end()

	a.setState(Rebalancing)
	if err := a.start(ctx); err != nil {
		a.fail(err)
		a.shutdown()
		return err
	}
	runErr := error(nil)
	if a.kc() != nil { // nil when ctx ended before the broker answered
		runErr = a.run(ctx)
	}
	// An assignment still being taken up would change the state to
	// Running after the changes below.
	a.awaitArriving()
	if a.crashing.Load() {
		a.shutdown()
		return nil
	}
	if runErr == nil {
		a.setState(PendingShutdown)
	} else {
		a.fail(runErr)
	}
	// Commit what was processed even when failing: the failed record is
	// not part of it, so a restart resumes exactly there. The commit
	// bounds its own waits.
	if err := a.finalCommit(a.clientCtx, runErr != nil); err != nil {
		err = fmt.Errorf("committing on shutdown: %w", err)
		switch {
		case runErr != nil:
			a.log.Error("commit after failure failed", "err", err)
		case a.triage(err) == nil:
			a.log.Warn("commit on shutdown failed; the next owner of each task resumes from its last commit", "err", err)
		default:
			runErr = err
			a.fail(err)
		}
	}
	a.shutdown()
	if runErr != nil {
		return runErr
	}
	a.setState(NotRunning)
	return nil
}

// finalCommit commits what was processed when Run ends. Under
// exactly-once a failure aborts instead: the failed record may have left
// part of its outputs in the transaction.
func (a *App) finalCommit(ctx context.Context, failed bool) error {
	if a.kc() == nil {
		return nil // the session was lost and nothing runs
	}
	if a.txn != nil {
		return a.finishTransaction(ctx, failed)
	}
	return a.commit(ctx)
}

// start readies the App to poll: the state left on disk, the standby
// follower, the topics and the group client, waiting for the broker as
// long as it takes (connect).
func (a *App) start(ctx context.Context) error {
	if err := a.lockStateDir(); err != nil {
		return err
	}
	if err := a.scanStateDir(); err != nil {
		return err
	}
	a.startCleanup(time.Now())
	a.loadStaticJoin()
	if err := a.startStandbys(); err != nil {
		return err
	}
	if err := a.startSnapshots(ctx); err != nil {
		return err
	}
	return a.connect(ctx)
}

// shutdown leaves the group (unless crashing, when the cut connections
// make the leave fail at once), closes every task and replica and stops
// what start started.
func (a *App) shutdown() {
	a.closeClient()
	a.dropTasks(!a.crashing.Load())
	a.standby.stop()
	a.stopSnapshots()
	a.tasksMu.Lock()
	if a.probe != nil {
		a.probe.Stop()
	}
	a.tasksMu.Unlock()
	a.clientCancel()
	if a.dirLock != nil {
		_ = a.dirLock.Close()
		a.dirLock = nil
	}
}

// lockStateDir takes the App's state dir, so that a second instance given
// the same StateDir stops with a *StateDirInUseError before it opens a
// store, rather than meeting the first's store locks one task at a time
// (or deleting its stores as a task that moved away). As in Kafka
// Streams, a topology without stores keeps nothing there and takes no
// lock: stateless instances may share the default StateDir.
func (a *App) lockStateDir() error {
	if len(a.topo.Stores()) == 0 {
		return nil
	}
	dir := filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID)
	l, err := state.LockDir(dir)
	if errors.Is(err, state.ErrLocked) {
		return &StateDirInUseError{Dir: dir, ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID, Err: err}
	}
	if err != nil {
		return fmt.Errorf("locking the state dir: %w", err)
	}
	a.dirLock = l
	return nil
}

// crash stops the App the way a killed process stops: the connections of
// its clients are cut (no leave-group: the group notices when the
// session times out, unless a Supervisor removes the member), nothing is flushed or committed, pending store
// writes are dropped and the state dir is kept. It returns once Run has
// returned.
func (a *App) crash() {
	// A member that rejoined since its last assignment has a new id.
	if cl := a.kc(); cl != nil {
		a.noteMember(cl)
	}
	a.crashing.Store(true)
	a.clientCancel()
	a.mu.Lock()
	cancel, done := a.cancel, a.done
	a.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (a *App) begin(ctx context.Context) (context.Context, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running || a.state != Created {
		return nil, errors.New("running app: Run was already called; create a new App to run again")
	}
	a.running = true
	ctx, a.cancel = context.WithCancel(ctx)
	a.done = make(chan struct{})
	return ctx, nil
}

func (a *App) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancel()
	a.running = false
	close(a.done)
}

// Close stops a running App the way ending Run's context does, and waits
// until Run has committed, left the group and returned. A static member
// (Config.StaticMembership) stays in the group, so that a restart within
// the session timeout gets its tasks back; CloseAndLeave leaves. It is
// safe to call at any time and more than once.
func (a *App) Close() error {
	a.mu.Lock()
	cancel, done := a.cancel, a.done
	a.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	return nil
}

// State returns the App's current state.
func (a *App) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state
}

// setState sets the State and tells the hooks.
func (a *App) setState(to State) { a.changeState(to, nil) }

// changeState sets the State and tells the hooks, with the tasks a
// rebalance kept (StateChange.Kept).
func (a *App) changeState(to State, kept []TaskID) {
	a.mu.Lock()
	from := a.state
	a.state = to
	a.mu.Unlock()
	if from == to {
		return
	}
	a.log.Debug("state changed", "from", from, "to", to)
	for _, h := range a.hooks.state {
		h.OnStateChange(StateChange{ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID, From: from, To: to, Kept: kept})
	}
}

func (a *App) fail(err error) {
	a.log.Error("app failed", "err", err)
	var task TaskID
	if tf := (*TaskFailedError)(nil); errors.As(err, &tf) {
		task = tf.Task
	}
	a.reportError(task, err, true)
	a.setState(Failed)
}

func (a *App) reportError(task TaskID, err error, fatal bool) {
	for _, h := range a.hooks.errs {
		h.OnError(ErrorEvent{ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID, Task: task, Err: err, Fatal: fatal})
	}
}

// handle applies the configured handling to a record's error: nil means
// skip the record and go on.
func (a *App) handle(t *task, err error, how ErrorHandling) error {
	if how == FailOnError {
		return &TaskFailedError{Task: t.id, Err: err}
	}
	t.skipped++
	a.log.Warn("skipping record", "task", t.id.String(), "err", err)
	a.reportError(t.id, err, false)
	r := t.current
	if a.cfg.DeadLetterTopic != "" {
		a.produce(deadLetter(a.cfg.DeadLetterTopic, t.id, r, err))
	}
	for _, h := range a.hooks.skipped {
		h.OnRecordSkipped(SkippedRecord{Task: t.id, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err})
	}
	return nil
}

// deadLetter copies a skipped record, bytes as they were consumed, to the
// dead-letter topic, with headers saying where it came from and why it was
// skipped. It is produced like an output: the input offset is committed
// only once it is acknowledged.
func deadLetter(topic string, task TaskID, r *kgo.Record, err error) *kgo.Record {
	headers := append(slices.Clip(r.Headers),
		kgo.RecordHeader{Key: "braid.error", Value: []byte(err.Error())},
		kgo.RecordHeader{Key: "braid.task", Value: []byte(task.String())},
		kgo.RecordHeader{Key: "braid.topic", Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: "braid.partition", Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
		kgo.RecordHeader{Key: "braid.offset", Value: strconv.AppendInt(nil, r.Offset, 10)},
	)
	return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Headers: headers}
}

// loop polls and processes until ctx ends (nil) or something fails. Its
// commits and aborts run on clientCtx, with their own bounds, so that an
// end of ctx never cuts one short.
func (a *App) loop(ctx context.Context) error {
	lastCommit := time.Now()
	for {
		// Poll no longer than until the next commit is due, so that an
		// idle App still commits what it processed, nor than until a
		// waiting task's idle time passes.
		until := lastCommit.Add(a.cfg.CommitInterval)
		if now := time.Now(); until.Before(now) {
			// A commit is due but gave way to a join (join_gate.go).
			// The poll must still wait for records: with its deadline
			// passed, it would return nothing, at once, until the
			// join ended.
			until = now.Add(a.cfg.CommitInterval)
		}
		if w := a.idleWake; !w.IsZero() && w.Before(until) {
			until = w
		}
		if w := a.cleanupWake(); !w.IsZero() && w.Before(until) {
			until = w
		}
		pollCtx, cancel := context.WithDeadline(ctx, until)
		a.waker.set(cancel)
		fetches := a.kc().PollRecords(pollCtx, a.cfg.MaxPollRecords)
		a.waker.set(nil)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err := a.joinOverdue(); err != nil {
			return err
		}
		if a.txn != nil && a.txn.mustAbort.Load() {
			// The group revoked or lost partitions while a transaction
			// was open. The records of this poll are dropped: the abort
			// rewinds every partition to its committed offset, where
			// they are fetched again.
			if err := a.abortTransaction(a.clientCtx); err != nil {
				return err
			}
			a.kc().AllowRebalance()
			continue
		}
		err := a.processPoll(fetches)
		if a.txn == nil {
			// Under at-least-once a revocation commits, so the rebalance
			// may go ahead before the commit below.
			a.kc().AllowRebalance()
		}
		if err == nil {
			err = a.producedError()
		}
		if err == nil && a.commitDue(lastCommit) {
			if err = a.intervalCommit(a.clientCtx); err == nil {
				lastCommit = time.Now()
				a.tasksMu.Lock()
				a.publishHeld()
				a.tasksMu.Unlock()
			} else if errors.Is(err, errCommitDeferred) {
				err = nil // the next iteration after the join commits
			} else if errors.Is(err, errTasksAbandoned) {
				// The session was lost and its tasks dropped
				// (onLost); franz-go joins again by itself.
				err = nil
			}
		}
		if err != nil {
			return err
		}
		a.maybeCleanStateDirs(time.Now())
		if a.txn != nil {
			// Under exactly-once the commit came first: a revocation
			// could only abort (see eos.go).
			a.kc().AllowRebalance()
		}
	}
}

// processPoll starts the tasks whose restore finished and lets the tasks
// process what the poll fetched.
func (a *App) processPoll(fetches kgo.Fetches) error {
	// An assignment taken up beside the fetch (onAssigned) is reported,
	// its tasks' moves and the state Running, before they process.
	a.awaitArriving()
	if err := a.resumeRestored(); err != nil {
		return err
	}
	if err := fetchError(fetches); err != nil {
		return err
	}
	return a.processFetches(fetches)
}

// commitDue reports whether to commit now: under exactly-once, when a
// rebalance waits for this instance, which commits first so that the
// revocation finds nothing to abort (no join is under way while a
// rebalance waits); else when the commit interval passed, unless a
// cooperative join is under way (join_gate.go). Under exactly-once the
// interval waits for a join no longer than half the transaction timeout,
// past which the broker would abort the open transaction.
func (a *App) commitDue(lastCommit time.Time) bool {
	if a.txn != nil && a.txn.rebalanceWaiting.Swap(false) {
		return true
	}
	now := time.Now()
	if now.Sub(lastCommit) < a.cfg.CommitInterval {
		return false
	}
	joining, ok := a.joiningFor(now)
	if !ok {
		return true
	}
	return a.txn != nil && joining >= a.cfg.TransactionTimeout/2
}

func fetchError(fetches kgo.Fetches) error {
	var errs []error
	fetches.EachError(func(topic string, partition int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		errs = append(errs, brokerErr(fmt.Sprintf("fetching %s/%d", topic, partition), err))
	})
	return errors.Join(errs...)
}

// processFetches routes fetched records to their tasks' queues and lets
// each task process what it has.
func (a *App) processFetches(fetches kgo.Fetches) error {
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	a.applyListedLags()
	var touched []*task
	readCommitted := a.txn != nil
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		tp := TopicPartition{p.Topic, p.Partition}
		q, ok := a.byTP[tp]
		if !ok {
			return // revoked meanwhile; its records are fetched again by the next owner
		}
		recs := q.noteFetch(&p.FetchPartition, readCommitted)
		if len(recs) == 0 {
			return // transaction markers only
		}
		q.push(recs)
		t := a.taskOf[tp]
		if t.restoring == nil && (len(touched) == 0 || touched[len(touched)-1] != t) {
			touched = append(touched, t)
		}
	})
	if a.txn != nil && len(touched) > 0 {
		a.txn.dirty.Store(true)
	}
	err := a.processRoundRobin(a.tasksToRecheck(touched))
	a.afterIdling()
	a.publishCounters()
	if err != nil {
		return err
	}
	if len(touched) > 0 && a.standby.waiting.Load() && !a.recovering() {
		a.standby.goAhead()
	}
	return nil
}

// taskRound is how many records a task processes before the next task's
// turn: enough to keep the per-call costs small, few enough that a task
// with a large backlog does not hold the others up for long.
const taskRound = 1000

// processRoundRobin lets the tasks process their buffered records in
// rounds of taskRound, tasks that just arrived first: each of those is
// down until it processes a record, while the others only have a backlog
// to catch up on, and none waits for another's whole backlog.
func (a *App) processRoundRobin(tasks []*task) error {
	slices.SortStableFunc(tasks, func(x, y *task) int { return cmp.Compare(x.rank(), y.rank()) })
	for len(tasks) > 0 {
		next := tasks[:0]
		for _, t := range tasks {
			more, err := t.processUpTo(taskRound)
			if err != nil {
				return err
			}
			if more {
				next = append(next, t)
			}
		}
		tasks = next
	}
	return nil
}

// recovering reports whether a task that arrived here has not processed
// its first record yet, restoring or waiting for its first fetch. The
// caller holds tasksMu.
func (a *App) recovering() bool {
	for _, t := range a.tasks {
		if t.restoring != nil || t.rank() == 0 {
			return true
		}
	}
	return false
}

func (a *App) produce(r *kgo.Record) { a.send(r, a.promise) }

// send produces r, or hands it to the TestDriver.
func (a *App) send(r *kgo.Record, promise func(*kgo.Record, error)) {
	if a.capture != nil {
		a.capture(r, promise)
		return
	}
	a.kc().Produce(a.produceCtx, r, promise)
}

func (a *App) onProduced(r *kgo.Record, err error) {
	if err == nil || errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, kgo.ErrAborting) {
		// A client fails its buffered records when it closes, which
		// it does only once the App gave up their tasks (recover.go)
		// or stopped, and when the App abandons them with their tasks
		// (abandonProduced): no commit waits for them (the one that
		// flushed meanwhile sees the abandonment), and the failure may
		// come after the next session began.
		return
	}
	a.asyncErrMu.Lock()
	defer a.asyncErrMu.Unlock()
	if a.asyncErr == nil {
		a.asyncErr = brokerErr("producing to "+r.Topic, err)
	}
}

func (a *App) producedError() error {
	a.asyncErrMu.Lock()
	defer a.asyncErrMu.Unlock()
	return a.asyncErr
}

// setAsyncError records an error met off the processing goroutine; see
// asyncErr.
func (a *App) setAsyncError(err error) {
	a.asyncErrMu.Lock()
	defer a.asyncErrMu.Unlock()
	if a.asyncErr == nil {
		a.asyncErr = err
	}
}

// cacheBudget is one task's share of Config.CacheMaxBytes.
func (a *App) cacheBudget() int {
	if a.cfg.CacheMaxBytes < 0 {
		return 0
	}
	return int(a.cfg.CacheMaxBytes) / max(1, len(a.tasks))
}

// finishRestore hands a restoration that ended to the processing
// goroutine and wakes it.
func (a *App) finishRestore(r *restoration) {
	a.finishedMu.Lock()
	a.finished = append(a.finished, r)
	a.finishedMu.Unlock()
	a.wakePoll()
}

// resumeRestored starts the tasks whose restore finished. A restoration
// that a rebalance cancelled, or whose task left, is passed over: the
// task restores again from its stores' checkpoints if it comes back.
func (a *App) resumeRestored() error {
	a.finishedMu.Lock()
	finished := a.finished
	a.finished = nil
	a.finishedMu.Unlock()
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	for _, r := range finished {
		t := r.task
		if a.tasks[t.id] != t || t.restoring != r {
			continue
		}
		if r.err != nil {
			return &TaskFailedError{Task: t.id, Err: r.err}
		}
		t.restoring = nil
		if err := t.start(); err != nil {
			return &TaskFailedError{Task: t.id, Err: err}
		}
		a.kc().ResumeFetchPartitions(t.partitionMap())
	}
	return nil
}

// subtopologyInfo lists the real topics and changelogs of each
// sub-topology for the balancer.
func (a *App) subtopologyInfo() []assign.Subtopology {
	out := make([]assign.Subtopology, len(a.topo.subtopologies))
	for i, st := range a.topo.subtopologies {
		out[i].ID = st.id
		for _, src := range st.sources {
			for _, t := range src.topics {
				out[i].Topics = append(out[i].Topics, a.realTopic(t, src.internal))
			}
		}
		for _, n := range st.nodes {
			for _, spec := range n.storeSpecs {
				if spec.logged {
					out[i].Changelogs = append(out[i].Changelogs, changelogTopic(a.cfg.ApplicationID, spec.name))
				}
			}
		}
	}
	return out
}

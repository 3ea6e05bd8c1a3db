package streams

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SupervisorConfig configures a Supervisor.
type SupervisorConfig struct {
	// Config is what every instance starts from. Each instance gets its
	// own InstanceID, "<InstancePrefix>-<n>" or one of InstanceIDs, and
	// its own state directory, <Config.StateDir>/<InstanceID>.
	// Config.Hooks receive the events of every instance, and the
	// Supervisor's FailoverEvents.
	Config Config
	// Instances is how many instances Run starts. Default 1, or
	// len(InstanceIDs).
	Instances int
	// InstancePrefix names the instances. Default "instance".
	InstancePrefix string
	// InstanceIDs, when set, are the ids of the instances Run starts, one
	// each, in order, instead of "<InstancePrefix>-<n>": a process that
	// runs one instance of a group can name it exactly (braid run names
	// it after the host, for a StatefulSet pod). Instances must then be 0
	// or len(InstanceIDs); the ids must be distinct, non-empty and free
	// of path separators (each names a state directory). Add names the
	// instances it adds later "<InstancePrefix>-<n>", skipping ids taken.
	InstanceIDs []string
}

// InstanceState is what a Supervisor's instance is doing.
type InstanceState int

const (
	// InstanceRunning: its App runs (it may be rebalancing or restoring).
	InstanceRunning InstanceState = iota
	// InstanceCrashed: Crash killed it; its state dir is kept (but
	// CrashAndWipe's, which starts it again).
	InstanceCrashed
	// InstanceStopped: Stop shut it down gracefully.
	InstanceStopped
	// InstanceFailed: its App returned an error; Err says which.
	InstanceFailed
)

func (s InstanceState) String() string {
	switch s {
	case InstanceRunning:
		return "running"
	case InstanceCrashed:
		return "crashed"
	case InstanceStopped:
		return "stopped"
	case InstanceFailed:
		return "failed"
	}
	return "InstanceState(" + strconv.Itoa(int(s)) + ")"
}

// InstanceInfo describes one instance of a Supervisor.
type InstanceInfo struct {
	ID    string
	State InstanceState
	// Err is why a failed instance failed.
	Err error
	// Since is when the instance entered State.
	Since time.Time
	// Server is the Config.ApplicationServer the instance advertises to
	// its group, where its process answers store lookups; "" for none.
	Server string
	// Stats are its App's, while it runs.
	Stats Stats
}

// ErrSupervisorNotRunning is returned by a Supervisor's methods that
// need Run to be running.
var ErrSupervisorNotRunning = errors.New("supervisor is not running")

// UnknownInstanceError names an instance a Supervisor does not have.
type UnknownInstanceError struct{ ID string }

func (e *UnknownInstanceError) Error() string { return fmt.Sprintf("no instance %q", e.ID) }

// InstanceStateError says an instance is not in a state that allows the
// operation asked for, e.g. starting one that runs, or that another
// operation on it is under way (Busy): a crash, a stop, or the removal
// from the group of an App that just failed.
type InstanceStateError struct {
	ID    string
	State InstanceState
	Op    string
	Busy  bool
}

func (e *InstanceStateError) Error() string {
	if e.Busy {
		return fmt.Sprintf("cannot %s instance %q: another operation on it is under way (it is %s)", e.Op, e.ID, e.State)
	}
	return fmt.Sprintf("cannot %s instance %q: it is %s", e.Op, e.ID, e.State)
}

// claimError is the error of an operation that could not claim in.
func (s *Supervisor) claimError(in *instance, op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &InstanceStateError{ID: in.id, State: in.state, Op: op, Busy: in.busy}
}

// Supervisor runs several instances of one topology in this process, each
// an App with its own clients and state directory, as members of one
// group: what a cluster of machines would run, in one place where they
// can be crashed, stopped, started and added, and where every task's
// failover is measured (see FailoverHook). The designer's live view and
// the failover tests and benchmark use it.
type Supervisor struct {
	topo    *Topology
	cfg     SupervisorConfig
	tracker *failoverTracker

	// mu guards everything below. Operations on one instance hold it
	// only to change its record, never while an App stops, so that Stats
	// and the other instances stay responsive.
	mu        sync.Mutex
	ctx       context.Context
	detect    *detector // set by Run; see detect.go
	instances []*instance
	next      int
	wg        sync.WaitGroup
}

// instance is one member run by the Supervisor.
type instance struct {
	id    string
	app   *App
	state InstanceState
	err   error
	since time.Time
	// busy is set while an operation stops or starts the instance, so
	// that two operations never race on one instance.
	busy bool
	done chan struct{} // closed when the current App's Run returned
}

// NewSupervisor checks cfg and returns a Supervisor for topo. Run starts
// it.
func NewSupervisor(topo *Topology, cfg SupervisorConfig) (*Supervisor, error) {
	if topo == nil {
		return nil, errors.New("creating supervisor: topology is nil")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("creating supervisor: %w", err)
	}
	cfg.InstanceIDs = slices.Clone(cfg.InstanceIDs)
	if cfg.Instances == 0 {
		cfg.Instances = max(1, len(cfg.InstanceIDs))
	}
	if cfg.InstancePrefix == "" {
		cfg.InstancePrefix = "instance"
	}
	cfg.Config = cfg.Config.WithDefaults()
	return &Supervisor{topo: topo, cfg: cfg, tracker: newFailoverTracker(cfg.Config)}, nil
}

// validate reports every problem of cfg at once, joined with
// errors.Join, as Config.Validate does.
func (cfg SupervisorConfig) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if cfg.Instances < 0 {
		bad("Instances", "%d is negative", cfg.Instances)
	} else if len(cfg.InstanceIDs) > 0 && cfg.Instances != 0 && cfg.Instances != len(cfg.InstanceIDs) {
		bad("Instances", "%d does not match the %d InstanceIDs", cfg.Instances, len(cfg.InstanceIDs))
	}
	seen := map[string]bool{}
	for i, id := range cfg.InstanceIDs {
		switch {
		case id == "":
			bad("InstanceIDs", "id %d is empty", i)
		case strings.ContainsAny(id, `/\`) || id == "." || id == "..":
			bad("InstanceIDs", "id %q names no directory of its own (it holds a path separator or is . or ..)", id)
		case seen[id]:
			bad("InstanceIDs", "id %q is given twice", id)
		}
		seen[id] = true
	}
	// Every instance gets its own InstanceID: the config is checked
	// with one, so that StaticMembership does not ask for it.
	check := cfg.Config
	if check.InstanceID == "" {
		check.InstanceID = "instance-1"
	}
	if err := check.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run starts the configured instances and blocks until ctx ends; then it
// stops every running instance gracefully and returns once all have
// returned. An instance that fails does not end Run: it shows as failed
// and can be started again.
func (s *Supervisor) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ctx != nil {
		s.mu.Unlock()
		return errors.New("running supervisor: Run was already called")
	}
	detect, err := newDetector(s.cfg.Config)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("running supervisor: %w", err)
	}
	s.ctx, s.detect = ctx, detect
	s.mu.Unlock()
	// Closed once no instance and no Crash can use it any more: the
	// removals under way finish first.
	defer detect.close()
	var errs []error
	for i := range s.cfg.Instances {
		id := ""
		if i < len(s.cfg.InstanceIDs) {
			id = s.cfg.InstanceIDs[i]
		}
		if _, err := s.add(id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		<-ctx.Done()
	}
	// All at once: one by one, each leave would move tasks to instances
	// about to leave too.
	s.mu.Lock()
	running := slices.Clone(s.instances)
	s.mu.Unlock()
	var stopping sync.WaitGroup
	for _, in := range running {
		if app := s.claim(in); app != nil {
			stopping.Go(func() {
				app.Close()
				<-in.done
				s.release(in, InstanceStopped, nil)
			})
		}
	}
	stopping.Wait()
	s.wg.Wait()
	return errors.Join(errs...)
}

// Add starts a new instance and returns its id.
func (s *Supervisor) Add() (string, error) { return s.add("") }

// add is Add; a non-empty id names the new instance, and an empty one
// names it "<InstancePrefix>-<n>" with the next n whose id is not taken.
func (s *Supervisor) add(id string) (string, error) {
	s.mu.Lock()
	if s.ctx == nil || s.ctx.Err() != nil {
		s.mu.Unlock()
		return "", ErrSupervisorNotRunning
	}
	for id == "" {
		s.next++
		if next := s.cfg.InstancePrefix + "-" + strconv.Itoa(s.next); !s.taken(next) {
			id = next
		}
	}
	in := &instance{id: id, busy: true}
	s.instances = append(s.instances, in)
	s.mu.Unlock()
	if err := s.launch(in); err != nil {
		return in.id, err
	}
	return in.id, nil
}

// taken says an instance has id, or one of InstanceIDs is id. The caller
// holds mu.
func (s *Supervisor) taken(id string) bool {
	return slices.Contains(s.cfg.InstanceIDs, id) ||
		slices.ContainsFunc(s.instances, func(in *instance) bool { return in.id == id })
}

// Crash kills instance id as a crashed process dies: its connections are
// cut without leaving the group, nothing is flushed or committed, and its
// state dir is kept. Then the Supervisor, which saw it die, does what a
// cluster manager that watches its processes would: under exactly-once it
// fences the instance's transactional id, which aborts its open
// transaction, and it removes the dead member from the group, which
// rebalances at once instead of waiting for the session to time out (see
// detect.go). Each of its tasks is then measured as it fails over. Crash
// returns once the instance has stopped and the removal was answered,
// within the session timeout; a removal that fails is logged and leaves
// the group to notice at the session timeout.
func (s *Supervisor) Crash(id string) error { return s.crash(id, true, nil) }

// CrashThen is Crash that calls crashing once the crash is certain (the
// instance runs and no other operation has it) and before anything of it
// is done: whoever tells of the crash can tell it before the instance's
// tasks move, and never tells of a crash that did not happen. A
// CrashThen that returns an error without calling crashing did nothing.
func (s *Supervisor) CrashThen(id string, crashing func()) error { return s.crash(id, true, crashing) }

// crash is Crash; seen false skips the removal, for a crash that nobody
// saw: the group notices it at the session timeout. A non-nil crashing
// is called once the instance is claimed, before it is crashed.
func (s *Supervisor) crash(id string, seen bool, crashing func()) error {
	in, err := s.find(id, "crash", InstanceRunning)
	if err != nil {
		return err
	}
	app := s.claim(in)
	if app == nil {
		return s.claimError(in, "crash")
	}
	if crashing != nil {
		crashing()
	}
	at := time.Now()
	app.crash()
	<-in.done
	// The crashed App keeps its last published stats: what it had
	// processed when it died. Recorded before the removal, which moves
	// the tasks at once, and so labelled before it is sent.
	how := DetectedBySessionTimeout
	if seen {
		how = DetectedBySupervisor
	}
	s.tracker.departing(id, "crash", how, at, app.Stats(), s.otherStats(id))
	if seen {
		if err := s.removeDead(app); err != nil {
			s.tracker.detected(id, DetectedBySessionTimeout)
		}
	}
	// Released only now: a Start before the fence would have its new
	// producer fenced.
	s.release(in, InstanceCrashed, nil)
	return nil
}

// CrashAndWipe crashes instance id as Crash does, deletes its state
// directory, and starts it again: what happens to a process whose pod is
// rescheduled on another node, which comes back under the same id with an
// empty disk. Every store of every task it gets is then restored from its
// changelog, from the first offset (see RestoreHook). CrashAndWipe
// returns once the instance runs again; its state is then InstanceRunning.
// A failure to delete the directory leaves the instance crashed.
func (s *Supervisor) CrashAndWipe(id string) error { return s.CrashAndWipeThen(id, nil) }

// CrashAndWipeThen is CrashAndWipe that calls crashing as CrashThen
// does: once the crash is certain, before the instance is crashed. An
// error returned without calling crashing means nothing was done; one
// returned after it, that the wipe or the start failed.
func (s *Supervisor) CrashAndWipeThen(id string, crashing func()) error {
	if err := s.crash(id, true, crashing); err != nil {
		return err
	}
	if err := s.wipe(id); err != nil {
		return err
	}
	return s.Start(id)
}

// StateDir is the state directory of instance id:
// <Config.StateDir>/<id>.
func (s *Supervisor) StateDir(id string) string { return filepath.Join(s.cfg.Config.StateDir, id) }

// Wipe deletes the state directory of instance id, which is crashed,
// stopped or failed: its next Start restores every store from the
// changelogs.
func (s *Supervisor) Wipe(id string) error {
	in, err := s.find(id, "wipe", InstanceCrashed, InstanceStopped, InstanceFailed)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if in.busy {
		s.mu.Unlock()
		return &InstanceStateError{ID: id, State: in.state, Op: "wipe"}
	}
	in.busy = true
	s.mu.Unlock()
	err = s.wipe(id)
	s.mu.Lock()
	in.busy = false
	s.mu.Unlock()
	return err
}

// wipe deletes the state directory of instance id, which is down.
func (s *Supervisor) wipe(id string) error {
	if err := os.RemoveAll(s.StateDir(id)); err != nil {
		return fmt.Errorf("wiping the state of instance %q: %w", id, err)
	}
	return nil
}

// removeDead removes the member of app, which died, and logs how that
// went: a failure leaves the group to the session timeout.
func (s *Supervisor) removeDead(app *App) error {
	s.mu.Lock()
	detect := s.detect
	s.mu.Unlock()
	err := detect.removeDead(app)
	switch {
	case errors.Is(err, errMemberGone):
		s.cfg.Config.Logger.Info("no member to remove for a dead instance", "app", s.cfg.Config.ApplicationID,
			"instance", app.cfg.InstanceID, "err", err)
	case err != nil:
		s.cfg.Config.Logger.Warn("removing a dead instance from the group failed; the group notices at the session timeout",
			"app", s.cfg.Config.ApplicationID, "instance", app.cfg.InstanceID, "err", err)
	}
	return err
}

// Stop shuts instance id down gracefully: it commits and leaves the group,
// which rebalances at once, a static member too (App.CloseAndLeave): a
// stopped instance is gone until Start, and its tasks should not wait for
// its session to time out. Stop returns once the instance has stopped.
func (s *Supervisor) Stop(id string) error {
	in, err := s.find(id, "stop", InstanceRunning)
	if err != nil {
		return err
	}
	app := s.claim(in)
	if app == nil {
		return s.claimError(in, "stop")
	}
	// Recorded before the leave: the group may move the tasks before
	// Close returns.
	s.tracker.departing(id, "stop", DetectedByLeave, time.Now(), app.Stats(), s.otherStats(id))
	err = app.CloseAndLeave()
	<-in.done
	s.release(in, InstanceStopped, nil)
	return err
}

// Start starts a crashed, stopped or failed instance again, with the same
// id and state directory.
func (s *Supervisor) Start(id string) error {
	in, err := s.find(id, "start", InstanceCrashed, InstanceStopped, InstanceFailed)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if in.busy {
		s.mu.Unlock()
		return &InstanceStateError{ID: id, State: in.state, Op: "start", Busy: true}
	}
	in.busy = true
	s.mu.Unlock()
	return s.launch(in)
}

// Instances describes every instance, in the order they were added.
func (s *Supervisor) Instances() []InstanceInfo {
	s.mu.Lock()
	type entry struct {
		info InstanceInfo
		app  *App
	}
	entries := make([]entry, len(s.instances))
	for i, in := range s.instances {
		entries[i] = entry{InstanceInfo{ID: in.id, State: in.state, Err: in.err, Since: in.since, Server: s.cfg.Config.ApplicationServer}, in.app}
	}
	s.mu.Unlock()
	out := make([]InstanceInfo, len(entries))
	for i, e := range entries {
		out[i] = e.info
		if e.info.State == InstanceRunning && e.app != nil {
			out[i].Stats = e.app.Stats()
		}
	}
	return out
}

// find returns instance id if it is in one of the states.
func (s *Supervisor) find(id, op string, states ...InstanceState) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.ctx.Err() != nil {
		return nil, ErrSupervisorNotRunning
	}
	for _, in := range s.instances {
		if in.id == id {
			if !slices.Contains(states, in.state) {
				return nil, &InstanceStateError{ID: id, State: in.state, Op: op}
			}
			return in, nil
		}
	}
	return nil, &UnknownInstanceError{ID: id}
}

// claim marks a running instance busy and returns its App, or nil when
// it is not running or another operation has it.
func (s *Supervisor) claim(in *instance) *App {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.busy || in.state != InstanceRunning || in.app == nil {
		return nil
	}
	in.busy = true
	return in.app
}

// release ends an operation on in, leaving it in state to.
func (s *Supervisor) release(in *instance, to InstanceState, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in.state, in.err, in.since, in.busy = to, err, time.Now(), false
	in.app = nil
}

// launch starts a new App for in, which the caller marked busy.
func (s *Supervisor) launch(in *instance) error {
	cfg := s.cfg.Config
	cfg.InstanceID = in.id
	cfg.StateDir = s.StateDir(in.id)
	cfg.Hooks = append(slices.Clip(cfg.Hooks), s.tracker)
	app, err := New(s.topo, cfg)
	if err != nil {
		s.release(in, InstanceFailed, err)
		return err
	}
	done := make(chan struct{})
	s.mu.Lock()
	in.app, in.done, in.state, in.err, in.since, in.busy = app, done, InstanceRunning, nil, time.Now(), false
	ctx := s.ctx
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		err := app.Run(ctx)
		close(done)
		s.exited(in, app, err)
	}()
	return nil
}

// exited records an App that returned on its own: failed, or ended with
// the Supervisor's context. Crash and Stop record their own outcome. A
// failed App is removed from the group as a crashed one is, in case its
// own leave did not reach the broker: usually it did, and the group
// answers that the member is gone.
func (s *Supervisor) exited(in *instance, app *App, err error) {
	s.mu.Lock()
	if in.app != app || in.busy {
		s.mu.Unlock()
		return
	}
	if err == nil {
		in.app, in.since, in.state = nil, time.Now(), InstanceStopped
		s.mu.Unlock()
		return
	}
	// Busy until the removal is done, so that no Start races its fence.
	in.busy = true
	s.mu.Unlock()
	_ = s.removeDead(app)
	s.release(in, InstanceFailed, err)
}

// otherStats snapshots every running instance but id.
func (s *Supervisor) otherStats(id string) []Stats {
	var out []Stats
	for _, info := range s.Instances() {
		if info.ID != id && info.State == InstanceRunning {
			out = append(out, info.Stats)
		}
	}
	return out
}

// Get looks key up in the named store on every running instance, as
// App.Get does on one, and returns the answer of the instance whose active
// task holds it. When none holds it and one is restoring the store, the
// error is that instance's *StoreNotReadyError: the key may be there once
// it has caught up (or its *StoreBusyError, when its tasks were busy).
func (s *Supervisor) Get(store string, key any) (value any, found bool, err error) {
	r, err := s.Lookup(store, key)
	return r.Value, r.Found, err
}

// LookupResult is a key's value, its row's timestamp (see
// ValueAndTimestamp) and the instance that holds it.
type LookupResult struct {
	Instance  string
	Value     any
	Timestamp int64
	Found     bool
}

// Lookup is Get, telling which instance answered.
func (s *Supervisor) Lookup(store string, key any) (LookupResult, error) {
	var notReady error
	for _, in := range s.runningApps() {
		v, ok, err := in.app.GetWithTimestamp(store, key)
		var nr *StoreNotReadyError
		var busy *StoreBusyError
		switch {
		case errors.As(err, &nr), errors.As(err, &busy):
			notReady = err
		case err != nil:
			return LookupResult{}, err
		case ok:
			return LookupResult{Instance: in.id, Value: v.Value, Timestamp: v.Timestamp, Found: true}, nil
		}
	}
	return LookupResult{}, notReady
}

// Range calls fn for the committed rows of a key-value store on every
// running instance whose keys are in [from, to) (nil bounds are open), as
// App.Range does on one, instance by instance, until fn returns false.
func (s *Supervisor) Range(store string, from, to any, fn func(instance string, key, value any) bool) error {
	return s.RangeWithTimestamps(store, from, to, func(instance string, k any, row ValueAndTimestamp) bool {
		return fn(instance, k, row.Value)
	})
}

// RangeWithTimestamps is Range passing each row with its timestamp, as
// App.RangeWithTimestamps does.
func (s *Supervisor) RangeWithTimestamps(store string, from, to any, fn func(instance string, key any, row ValueAndTimestamp) bool) error {
	for _, in := range s.runningApps() {
		more := true
		err := in.app.RangeWithTimestamps(store, from, to, func(k any, row ValueAndTimestamp) bool {
			more = fn(in.id, k, row)
			return more
		})
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// FetchWindows returns key's windows of a window or session store in
// [from, to], as App.FetchWindows does, from the instance that holds the
// key, and that instance's id ("" when none does).
func (s *Supervisor) FetchWindows(store string, key any, from, to int64) ([]WindowResult, string, error) {
	for _, in := range s.runningApps() {
		found, err := in.app.FetchWindows(store, key, from, to)
		if err != nil {
			return nil, "", err
		}
		if len(found) > 0 {
			return found, in.id, nil
		}
	}
	return nil, "", nil
}

type runningApp struct {
	id  string
	app *App
}

// runningApps lists the running instances' Apps, in the order they were
// added.
func (s *Supervisor) runningApps() []runningApp {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []runningApp
	for _, in := range s.instances {
		if in.state == InstanceRunning && in.app != nil {
			out = append(out, runningApp{in.id, in.app})
		}
	}
	return out
}

// Members returns the group's members and their tasks as a running
// instance last saw them assigned (see App.Members), nil when none runs.
func (s *Supervisor) Members() []Member {
	for _, in := range s.runningApps() {
		if m := in.app.Members(); m != nil {
			return m
		}
	}
	return nil
}

// OpenWindows returns the open windows of a windowed store on a running
// instance, as App.OpenWindows does.
func (s *Supervisor) OpenWindows(id, store string) ([]OpenWindow, error) {
	s.mu.Lock()
	i := slices.IndexFunc(s.instances, func(in *instance) bool { return in.id == id })
	if i < 0 {
		s.mu.Unlock()
		return nil, &UnknownInstanceError{ID: id}
	}
	in := s.instances[i]
	app, state := in.app, in.state
	s.mu.Unlock()
	if state != InstanceRunning || app == nil {
		return nil, &InstanceStateError{ID: id, State: state, Op: "query"}
	}
	return app.OpenWindows(store)
}

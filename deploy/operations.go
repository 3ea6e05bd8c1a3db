package deploy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// List describes every deployment, by id, and every application that
// runs elsewhere and reports (Watch), marked Watched.
func (m *Manager) List() []Info {
	m.mu.Lock()
	deps := make([]*deployment, 0, len(m.deps))
	for _, dep := range m.deps {
		deps = append(deps, dep)
	}
	m.mu.Unlock()
	out := make([]Info, len(deps))
	for i, dep := range deps {
		out[i] = m.describe(dep)
	}
	local := make(map[string]bool, len(out))
	for _, in := range out {
		local[in.ID] = true
	}
	out = append(out, m.orchestratedInfos(local)...)
	for _, in := range out {
		local[in.ID] = true
	}
	out = append(out, m.watchedInfos(local)...)
	slices.SortFunc(out, func(x, y Info) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// RunsApplication reports whether one of the deployments runs the
// application appID here: its instances report through the monitor's
// hooks, not through telemetry.
func (m *Manager) RunsApplication(appID string) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, dep := range m.deps {
		if dep.info.ApplicationID == appID {
			return true
		}
	}
	return false
}

// Get describes one deployment.
// An application other processes run, which Watch described, comes
// marked Remote.
func (m *Manager) Get(id string) (Info, error) {
	dep, err := m.find(id)
	if info, ok := m.orchestratedInfo(id); ok && dep == nil && !errors.Is(err, ErrNotRunning) {
		return info, nil
	}
	var remote *RemoteError
	if errors.As(err, &remote) {
		info, _ := m.watchedInfo(id)
		return info, nil
	}
	if err != nil {
		return Info{}, err
	}
	return m.describe(dep), nil
}

func (m *Manager) find(id string) (*deployment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.runningLocked(); err != nil {
		return nil, err
	}
	if dep := m.deps[id]; dep != nil {
		return dep, nil
	}
	if _, ok := m.watchedInfo(id); ok || m.isOrchestrated(id) {
		return nil, &RemoteError{ID: id, Op: "operating on a deployment", Reason: "generators and added instances do not reach them"}
	}
	return nil, &NotDeployedError{ID: id}
}

// describe is a deployment's Info with its generators as they are now.
func (m *Manager) describe(dep *deployment) Info {
	m.mu.Lock()
	info := dep.info
	m.mu.Unlock()
	info.Generators = dep.gens.infos()
	return info
}

// Crash crashes an instance of a deployment (see streams.Supervisor.Crash).
func (m *Manager) Crash(id, instance string) error {
	return m.instanceOp(id, instance, "crashed", func(d *deployment, tell func()) error {
		return d.sup.CrashThen(instance, tell)
	})
}

// CrashWipe crashes an instance, deletes its state dir and starts it
// again (see streams.Supervisor.CrashAndWipe): a process that lost its
// disk, which restores every store it gets from the changelogs. For an
// application other processes run, the process wipes its state dir and
// exits for whoever started it to restart it (see control.CrashWipe).
func (m *Manager) CrashWipe(id, instance string) error {
	return m.instanceOp(id, instance, "crash-wiped", func(d *deployment, tell func()) error {
		return d.sup.CrashAndWipeThen(instance, tell)
	})
}

// Stop stops an instance gracefully.
func (m *Manager) Stop(id, instance string) error {
	return m.instanceOp(id, instance, "stopped", func(d *deployment, tell func()) error {
		return tellAfter(d.sup.Stop(instance), tell)
	})
}

// Start starts a crashed or stopped instance again.
func (m *Manager) Start(id, instance string) error {
	return m.instanceOp(id, instance, "started", func(d *deployment, tell func()) error {
		return tellAfter(d.sup.Start(instance), tell)
	})
}

// Add starts one more instance and returns its id.
func (m *Manager) Add(id string) (string, error) {
	dep, err := m.find(id)
	if err != nil {
		return "", err
	}
	// One at a time, so that two adds cannot both pass the cap.
	dep.addMu.Lock()
	defer dep.addMu.Unlock()
	m.mu.Lock()
	n := dep.info.Instances
	m.mu.Unlock()
	if n >= m.cfg.MaxInstances {
		return "", &RequestError{Field: "instances", Problem: fmt.Sprintf("deployment %q runs %d instances, the most a deployment may run (%d)", id, n, m.cfg.MaxInstances)}
	}
	instance, err := dep.sup.Add()
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	dep.info.Instances++
	m.mu.Unlock()
	m.cfg.Monitor.InstanceEvent(id, instance, "added")
	m.saveRecords()
	return instance, nil
}

// instanceOp runs op on an instance; op calls tell, which tells the
// monitor, when what it does is certain. A crash is told before the
// instance crashes, once the Supervisor has claimed it: the instance
// reports nothing once dead, and its tasks move at once. Stop and start
// are told once done (tellAfter). An operation that fails before it
// does anything tells nothing: the timeline shows only what happened.
func (m *Manager) instanceOp(id, instance, kind string, op func(d *deployment, tell func()) error) error {
	dep, err := m.find(id)
	var remote *RemoteError
	if errors.As(err, &remote) {
		return m.command(id, instance, kind)
	}
	if err != nil {
		return err
	}
	return op(dep, func() { m.cfg.Monitor.InstanceEvent(id, instance, kind) })
}

// tellAfter calls tell when an operation's err is nil, and returns err.
func tellAfter(err error, tell func()) error {
	if err != nil {
		return err
	}
	tell()
	return nil
}

// Query asks a store of a deployment, on whichever instances hold it:
// for a key-value store, the value of Key, or with no key the rows from
// From to To (empty bounds are open; at most Limit rows, default 100);
// for a window or session store, the windows of Key. Keys are given as
// text and passed to the store's key serde as strings.
type Query struct {
	Store, Key, From, To string
	Limit                int
}

// QueryResult is a store's answer. Instance names who answered a key.
// Timestamps are those of the rows (streams.ValueAndTimestamp), in
// milliseconds since the epoch; Timestamp is set with Value.
type QueryResult struct {
	Store     string      `json:"store"`
	Type      string      `json:"type"`
	Found     bool        `json:"found"`
	Value     any         `json:"value,omitempty"`
	Timestamp *int64      `json:"timestamp,omitempty"`
	Instance  string      `json:"instance,omitempty"`
	Rows      []Row       `json:"rows,omitempty"`
	Windows   []WindowRow `json:"windows,omitempty"`
	// Truncated says Limit cut the rows short.
	Truncated bool `json:"truncated,omitempty"`
	// Stale says a standby replica answered for a key whose active did
	// not (an application other processes run, whose process holding the
	// key is down); Lag is how many changelog records it had not applied.
	Stale bool  `json:"stale,omitempty"`
	Lag   int64 `json:"lag,omitempty"`
	// Unanswered lists the store servers of such an application whose
	// rows a range scan misses, as they did not answer.
	Unanswered []string `json:"unanswered,omitempty"`
}

// Row is one row of a key-value store, with its timestamp and the
// instance that holds it.
type Row struct {
	Key       any    `json:"key"`
	Value     any    `json:"value"`
	Timestamp int64  `json:"timestamp"`
	Instance  string `json:"instance"`
}

// WindowRow is one window's value for the queried key, with its
// timestamp (the newest of the window's records).
type WindowRow struct {
	Start     int64 `json:"start"`
	End       int64 `json:"end"`
	Value     any   `json:"value"`
	Timestamp int64 `json:"timestamp"`
}

// Query runs q against deployment id. For an application other processes
// run, q goes to the store server of one of its processes (see
// remote_query.go); without any, the error is a RemoteError.
func (m *Manager) Query(id string, q Query) (QueryResult, error) {
	dep, err := m.find(id)
	var remote *RemoteError
	if errors.As(err, &remote) {
		return m.queryRemote(id, q)
	}
	if err != nil {
		return QueryResult{}, err
	}
	i := slices.IndexFunc(dep.info.Stores, func(st StoreInfo) bool { return st.Name == q.Store })
	if i < 0 {
		return QueryResult{}, &RequestError{Field: "store", Problem: fmt.Sprintf("deployment %q has no store %q", id, q.Store)}
	}
	res := QueryResult{Store: q.Store, Type: dep.info.Stores[i].Type}
	switch {
	case res.Type != "key-value":
		if q.Key == "" {
			return res, &RequestError{Field: "key", Problem: fmt.Sprintf("%q is a %s store: give a key to see its windows", q.Store, res.Type)}
		}
		found, instance, err := dep.sup.FetchWindows(q.Store, q.Key, 0, math.MaxInt64)
		for _, w := range found {
			res.Windows = append(res.Windows, WindowRow{Start: w.Window.Start, End: w.Window.End, Value: w.Value, Timestamp: w.Timestamp})
		}
		res.Found, res.Instance = len(found) > 0, instance
		return res, err
	case q.Key != "":
		r, err := dep.sup.Lookup(q.Store, q.Key)
		res.Found, res.Value, res.Instance = r.Found, r.Value, r.Instance
		if r.Found {
			res.Timestamp = &r.Timestamp
		}
		return res, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	bound := func(b string) any {
		if b == "" {
			return nil
		}
		return b
	}
	err = dep.sup.RangeWithTimestamps(q.Store, bound(q.From), bound(q.To), func(instance string, k any, row streams.ValueAndTimestamp) bool {
		if len(res.Rows) == limit {
			res.Truncated = true
			return false
		}
		res.Rows = append(res.Rows, Row{Key: k, Value: row.Value, Timestamp: row.Timestamp, Instance: instance})
		return true
	})
	res.Found = len(res.Rows) > 0
	return res, err
}

// ensureTopics creates the topics that do not exist yet, with
// Config.Partitions partitions each and the replication of every topic
// Braid creates (streams.ReplicationFor: min(3, brokers), with
// min.insync.replicas=2 at 3).
func (m *Manager) ensureTopics(topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	adm := kadm.NewClient(m.client)
	repl, err := streams.ReplicationFor(ctx, adm, 0)
	if err != nil {
		return fmt.Errorf("creating topics %v: %w", topics, err)
	}
	resp, err := repl.CreateTopics(ctx, adm, int32(m.cfg.Partitions), nil, topics...)
	if err != nil {
		return fmt.Errorf("creating topics %v: %w", topics, err)
	}
	var errs []error
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("creating topic %q: %w", r.Topic, r.Err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Instances started before every broker has the new topics found
	// their source missing on Kafka (MissingSourceTopicError).
	if _, err := streams.AwaitTopics(ctx, adm, topics...); err != nil {
		return fmt.Errorf("waiting for the metadata of created topics %v: %w", topics, err)
	}
	return nil
}

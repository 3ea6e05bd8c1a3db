// Package deploy runs designs. A deployment is one design, compiled from
// one of its saved revisions, running on a streams.Supervisor as N local
// instances of one application, with the monitor's hook in every
// instance, and data generators feeding its source topics. The designer's
// live view drives it: deploy, redeploy, undeploy, crash, stop, start and
// add instances, start and stop generators, query stores.
//
// A deployment may also run in processes others start (orchestrated.go):
// then the Manager writes it to the config topic (package deployconfig)
// for `braid run --deployment` processes and only watches them.
//
// One deployment per design: its id is the design's id, its application
// id "braid-<design id>" (designer.ApplicationID), so a redeploy of a new revision reuses the state
// and changelogs of the previous one when they are compatible.
package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/deployconfig"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures a Manager.
type Config struct {
	// Brokers are the Kafka bootstrap addresses. Required.
	Brokers []string
	// StateDir holds every deployment's state, under <StateDir>/<id>.
	// Required.
	StateDir string
	// Designs is where designs are read from. Required.
	Designs *designer.Store
	// Monitor receives every deployment's hooks and instance events.
	// Required.
	Monitor *monitor.Monitor
	// Partitions of the source and sink topics a deployment creates when
	// they are missing. Default 4.
	Partitions int
	// SessionTimeout of the deployments' instances. Default 3 s: short,
	// so that a crash shows its failover within seconds.
	SessionTimeout time.Duration
	// RebalanceProtocol of the deployments' instances. Default
	// cooperative: a crash or a new instance stops only the tasks that
	// move. Eager stops every task of every instance for each rebalance,
	// which the live view then shows.
	RebalanceProtocol streams.RebalanceProtocol
	// Logger gets the instances' logs. Default: slog.Default().
	Logger *slog.Logger
	// ClientOptions are added to every Kafka client of the deployments
	// (their instances' and the generators'): SASL, TLS.
	ClientOptions []kgo.Opt
	// MaxInstances caps the instances of one deployment, asked for at
	// deploy or added later. Default (and at most) MaxInstances.
	MaxInstances int
	// RecordFile, when set, is where the deployments and their settings
	// (revision, instances, standbys, guarantee, commit interval,
	// generators) are kept: rewritten atomically on every change, and
	// redeployed by Run when it starts. An undeploy removes its record;
	// Run's own undeploy on shutdown keeps them. Empty keeps nothing.
	RecordFile string
	// Commands, when set, sends crash, stop and start to the instances
	// of applications other processes run (Watch); without it those
	// operations fail with a RemoteError.
	Commands CommandSender
	// DeploymentTopic is the config topic of the orchestrated
	// deployments (Request.Orchestrated; package deployconfig). Default
	// deployconfig.DefaultTopic.
	DeploymentTopic string
	// QueryToken is the bearer token sent to the store servers of
	// applications other processes run (their --query-token), through
	// which their stores are queried.
	QueryToken string
	// SnapshotDir is where a deployment run here with snapshots on and
	// no SnapshotURL keeps them: <SnapshotDir>/<application id>. Empty,
	// such a deployment must name its URL.
	SnapshotDir string
}

// MaxInstances is the most instances a deployment may run. It is the one
// copy of the limit: the API enforces it and reports it
// (Manager.Limits, GET /api/deployment-limits), and the Deploy dialog
// reads it from there.
const MaxInstances = 16

// Commit interval bounds of a Request.
const (
	MinCommitIntervalMs = 10
	MaxCommitIntervalMs = 60_000
)

// Request asks for a deployment. Zero fields take the defaults.
type Request struct {
	// Design is the design's id. Required.
	Design string `json:"design"`
	// Revision to deploy; 0 means the latest.
	Revision int `json:"revision"`
	// Instances to run; 0 means the default, 3; at most MaxInstances.
	Instances int `json:"instances"`
	// Standbys per stateful task, from 0 to instances - 1. Absent (nil)
	// means the default: 1, or 0 with one instance.
	Standbys *int `json:"standbys,omitempty"`
	// Guarantee is "at-least-once" (default) or "exactly-once": every
	// commit one Kafka transaction of the outputs, changelog writes and
	// input offsets, so that read-committed readers of the sink topics
	// see every record's effect once, crashes included.
	Guarantee string `json:"guarantee"`
	// CommitIntervalMs, from MinCommitIntervalMs to MaxCommitIntervalMs
	// (10 to 60000); 0 defaults to 1000 at-least-once
	// (the runtime's 30 s would keep the live view still) and to
	// ExactlyOnceCommitIntervalMs exactly-once.
	CommitIntervalMs int64 `json:"commitIntervalMs"`
	// Orchestrated deploys to processes others start (`braid run
	// --deployment ID`, under Kubernetes, systemd or a shell) instead of
	// instances here: the deployment is a record of the config topic,
	// which they follow. Instances must be absent then: the processes
	// are the instances.
	Orchestrated bool `json:"orchestrated,omitempty"`
	// Snapshots turns on store snapshots (streams.Config.Snapshots): a
	// store with no local state, a wiped instance's, loads the newest one
	// and replays only the changelog past it. Off by default.
	// SnapshotURL is their blob store, file:///dir or s3://bucket...;
	// empty, a directory of this server's (Config.SnapshotDir), which an
	// orchestrated deployment's processes cannot share, so they need one.
	Snapshots   bool   `json:"snapshots,omitempty"`
	SnapshotURL string `json:"snapshotUrl,omitempty"`
}

// Info describes a deployment.
type Info struct {
	ID               string            `json:"id"`
	Design           string            `json:"design"`
	DesignName       string            `json:"designName"`
	Revision         int               `json:"revision"`
	ApplicationID    string            `json:"applicationId"`
	Instances        int               `json:"instances"`
	Standbys         int               `json:"standbys"`
	Guarantee        string            `json:"guarantee"`
	CommitIntervalMs int64             `json:"commitIntervalMs"`
	SourceTopics     []string          `json:"sourceTopics"`
	SinkTopics       []string          `json:"sinkTopics"`
	Generators       []GeneratorInfo   `json:"generators"`
	Stores           []StoreInfo       `json:"stores"`
	Operators        map[string]string `json:"operators"`
	Started          time.Time         `json:"started"`
	// Remote marks an application that runs in other processes (braid
	// run, an exported program) and that this server only watches
	// (Manager.Watch): it has no generators, and its instances are not
	// the server's to crash, stop or start. DesignDoc is its design
	// file, which the server's design store does not hold.
	Remote    bool            `json:"remote,omitempty"`
	DesignDoc json.RawMessage `json:"designDoc,omitempty"`
	// Commands says a Remote application's instances can be crashed,
	// stopped and started from here (Config.Commands is set).
	Commands bool `json:"commands,omitempty"`
	// Orchestrated marks a deployment to processes others start (it is
	// Remote too); Revision is then the deployment's (1, +1 on each
	// redeploy), RunCommand starts one of its processes, Reporting says
	// whether their telemetry arrives, and Processes is what each live
	// one last wrote to the config topic.
	Orchestrated bool            `json:"orchestrated,omitempty"`
	RunCommand   string          `json:"runCommand,omitempty"`
	Reporting    bool            `json:"reporting,omitempty"`
	Processes    []ProcessStatus `json:"processes,omitempty"`
	// Watched marks an application this server found in the telemetry
	// topic and did not deploy (Remote too): processes others started
	// (braid run, exported programs) run it. Processes is then what each
	// last reported, and State what they add up to: running, degraded,
	// gone or stopped (WatchedRunning...).
	Watched bool   `json:"watched,omitempty"`
	State   string `json:"state,omitempty"`
	// SnapshotURL is the blob store of the deployment's store snapshots,
	// "" when they are off.
	SnapshotURL string `json:"snapshotUrl,omitempty"`
}

// StoreInfo is one state store of a deployment.
type StoreInfo struct {
	Name string `json:"name"`
	// Type is "key-value", "window" or "session".
	Type    string `json:"type"`
	GraceMs int64  `json:"graceMs"`
	// Node is the design node that keeps the store; Subtopology the
	// sub-topology whose tasks keep it (task ids "<subtopology>_<n>").
	Node        string `json:"node"`
	Subtopology int    `json:"subtopology"`
	// Join marks one side's buffer of a stream-stream join (a "window"
	// store with no windows that close): it holds that side's records
	// for RetentionMs behind the side's latest record.
	Join        bool  `json:"join,omitempty"`
	RetentionMs int64 `json:"retentionMs,omitempty"`
}

// NotDeployedError says a design has no deployment.
type NotDeployedError struct{ ID string }

func (e *NotDeployedError) Error() string { return fmt.Sprintf("design %q is not deployed", e.ID) }

// RequestError says what is wrong with a Request or a generator spec.
type RequestError struct {
	Field, Problem string
}

func (e *RequestError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Problem) }

// Default commit intervals of a Request, by guarantee.
const (
	AtLeastOnceCommitIntervalMs = 1000
	// ExactlyOnceCommitIntervalMs is the runtime's default under
	// exactly-once (and Kafka Streams'): a sink's readers see a commit
	// interval's records only once its transaction commits.
	ExactlyOnceCommitIntervalMs = 100
)

// ErrNotRunning is returned before Run and after it returned.
var ErrNotRunning = errors.New("the deployment manager is not running")

// Manager runs the deployments.
type Manager struct {
	cfg Config
	log *slog.Logger

	// mu guards ctx and deps. Deploy and Undeploy hold it only to change
	// the map; starting and stopping a Supervisor happens outside it, one
	// operation per deployment at a time (busy).
	mu   sync.Mutex
	ctx  context.Context
	deps map[string]*deployment
	busy map[string]bool

	client *kgo.Client

	// kept holds the records of Config.RecordFile not running now: those
	// Run has still to redeploy, and those it could not (they stay kept
	// until the design is deployed or undeployed). Guarded by mu.
	kept map[string]record
	// hadRecords says Config.RecordFile existed when the Manager was made.
	hadRecords bool
	// ready closes once Run has redeployed the records.
	ready chan struct{}
	// saveMu orders the writes of Config.RecordFile.
	saveMu sync.Mutex
	// watched describes the applications other processes run.
	watched watchedApps
	// config writes and follows the config topic; orch is what it holds.
	config *deployconfig.Client
	orch   orchestrated
}

// deployment is one running design.
type deployment struct {
	info     Info
	compiled *compiler.Compiled
	sup      *streams.Supervisor
	stop     context.CancelFunc
	done     chan error
	gens     *generators
	addMu    sync.Mutex // serializes Add
}

// NewManager checks cfg and returns a Manager; Run runs it.
func NewManager(cfg Config) (*Manager, error) {
	var errs []error
	if len(cfg.Brokers) == 0 {
		errs = append(errs, errors.New("deploy: Config.Brokers is required"))
	}
	if cfg.StateDir == "" {
		errs = append(errs, errors.New("deploy: Config.StateDir is required"))
	}
	if cfg.Designs == nil {
		errs = append(errs, errors.New("deploy: Config.Designs is required"))
	}
	if cfg.Monitor == nil {
		errs = append(errs, errors.New("deploy: Config.Monitor is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 4
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxInstances <= 0 || cfg.MaxInstances > MaxInstances {
		cfg.MaxInstances = MaxInstances
	}
	kept, err := readRecords(cfg.RecordFile)
	if err != nil {
		return nil, err
	}
	hadRecords := kept != nil
	if kept == nil {
		kept = make(map[string]record)
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ProducerLinger(5 * time.Millisecond)}, cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("deploy: creating client: %w", err)
	}
	config, err := deployconfig.NewClient(deployconfig.Config{Brokers: cfg.Brokers, ClientOptions: cfg.ClientOptions,
		Topic: cfg.DeploymentTopic, Logger: cfg.Logger})
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("deploy: %w", err)
	}
	return &Manager{cfg: cfg, log: cfg.Logger, deps: make(map[string]*deployment), busy: make(map[string]bool), client: cl,
		kept: kept, hadRecords: hadRecords, ready: make(chan struct{}), config: config,
		orch: orchestrated{deps: make(map[string]orchestratedDep), procs: make(map[string]*deployconfig.Processes)}}, nil
}

// Limits are the bounds of a Request, as the Deploy dialog shows them.
type Limits struct {
	MaxInstances        int   `json:"maxInstances"`
	MinCommitIntervalMs int64 `json:"minCommitIntervalMs"`
	MaxCommitIntervalMs int64 `json:"maxCommitIntervalMs"`
	// SnapshotDir is Config.SnapshotDir, absolute: where snapshots go by
	// default, which the dialog shows; "" when a URL is required.
	SnapshotDir string `json:"snapshotDir,omitempty"`
}

// Limits reports the bounds the Manager enforces on requests.
func (m *Manager) Limits() Limits {
	l := Limits{MaxInstances: m.cfg.MaxInstances, MinCommitIntervalMs: MinCommitIntervalMs, MaxCommitIntervalMs: MaxCommitIntervalMs}
	if m.cfg.SnapshotDir != "" {
		l.SnapshotDir, _ = filepath.Abs(m.cfg.SnapshotDir)
	}
	return l
}

// Run lets deployments run until ctx ends, then undeploys them all and
// returns once they have stopped. It redeploys the records of
// Config.RecordFile and reads the config topic from its start (for
// configWait at most) before Ready.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	var follow sync.WaitGroup
	defer m.config.Close()
	defer follow.Wait()
	caughtUp := make(chan struct{})
	follow.Go(func() { m.followConfig(ctx, caughtUp) })
	m.restore()
	select {
	case <-caughtUp:
	case <-ctx.Done():
	case <-time.After(configWait):
		m.log.Warn("the deployment config topic was not read in time; its deployments show once it is", "topic", m.config.Topic(), "after", configWait)
	}
	close(m.ready)
	<-ctx.Done()
	m.mu.Lock()
	ids := slices.Collect(maps.Keys(m.deps))
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			// Not forgotten: the record stays, and the next Run
			// redeploys it.
			if err := m.undeploy(id, false); err != nil && !errors.As(err, new(*NotDeployedError)) {
				m.log.Warn("undeploying on shutdown", "deployment", id, "err", err)
			}
		})
	}
	wg.Wait()
	m.client.Close()
	return nil
}

// Deploy compiles the requested revision and runs it. A design that is
// deployed already is redeployed: its generators and instances stop, and
// the new revision starts with the same application id, so its state is
// reused where compatible, and the generators start again.
func (m *Manager) Deploy(req Request) (Info, error) {
	if req.Orchestrated {
		return m.deployOrchestrated(req)
	}
	return m.deploy(req, nil, false)
}

// deploy deploys req. With restoring, gens are the generators to start
// (a record's); else a redeploy starts the generators the old deployment
// ran.
func (m *Manager) deploy(req Request, gens []GeneratorSpec, restoring bool) (Info, error) {
	req, err := m.check(req)
	if err != nil {
		return Info{}, err
	}
	d, rev, err := m.cfg.Designs.GetRevision(req.Design, req.Revision)
	if err != nil {
		return Info{}, err
	}
	compiled, err := compiler.Compile(d, compiler.Options{})
	if err != nil {
		return Info{}, err
	}
	if err := m.claimRunning(req.Design); err != nil {
		return Info{}, err
	}
	defer m.unclaim(req.Design)
	if _, err := m.undeployOrchestrated(req.Design); err != nil {
		return Info{}, err // deployed here, it must not run in processes too
	}
	specs := gens
	var oldRecord *record
	if old := m.take(req.Design); old != nil {
		if !restoring {
			specs = old.gens.specs()
		}
		r := m.recordOf(old)
		oldRecord = &r
		m.shutdown(old)
	}
	dep, err := m.start(req, d, rev.Number, compiled)
	if err != nil {
		if oldRecord != nil {
			// The old deployment stopped and the new one did not
			// start: the old one's record stays, for the next start.
			m.mu.Lock()
			m.kept[req.Design] = *oldRecord
			m.mu.Unlock()
		}
		return Info{}, err
	}
	for _, spec := range specs {
		if err := dep.gens.start(spec); err != nil {
			m.log.Warn("restarting a generator after the redeploy failed", "deployment", dep.info.ID, "topic", spec.Topic, "err", err)
		}
	}
	m.mu.Lock()
	delete(m.kept, req.Design)
	m.mu.Unlock()
	m.saveRecords()
	return m.describe(dep), nil
}

// check fills the request's defaults and reports what is wrong with it.
func (m *Manager) check(req Request) (Request, error) {
	if req.Design == "" {
		return req, &RequestError{Field: "design", Problem: "is required"}
	}
	if req.Instances == 0 {
		req.Instances = 3
	}
	if req.Instances < 1 || req.Instances > m.cfg.MaxInstances {
		return req, &RequestError{Field: "instances", Problem: fmt.Sprintf("%d is not from 1 to %d (the most instances a deployment may run)", req.Instances, m.cfg.MaxInstances)}
	}
	if req.Standbys == nil {
		req.Standbys = new(min(1, req.Instances-1))
	}
	if n := *req.Standbys; n < 0 || n >= max(req.Instances, 2) {
		return req, &RequestError{Field: "standbys", Problem: fmt.Sprintf("%d is not from 0 to %d (instances - 1)", n, max(req.Instances-1, 0))}
	}
	if req.Guarantee == "" {
		req.Guarantee = streams.AtLeastOnce.String()
	}
	g, err := streams.ParseGuarantee(req.Guarantee)
	if err != nil {
		return req, &RequestError{Field: "guarantee", Problem: err.Error()}
	}
	commitMs := int64(AtLeastOnceCommitIntervalMs)
	if g == streams.ExactlyOnce {
		commitMs = ExactlyOnceCommitIntervalMs
	}
	if req.CommitIntervalMs == 0 {
		req.CommitIntervalMs = commitMs
	}
	if req.CommitIntervalMs < MinCommitIntervalMs || req.CommitIntervalMs > MaxCommitIntervalMs {
		return req, &RequestError{Field: "commitIntervalMs", Problem: fmt.Sprintf("%d is not from %d to %d", req.CommitIntervalMs, MinCommitIntervalMs, MaxCommitIntervalMs)}
	}
	return req, m.checkSnapshots(req)
}

// checkSnapshots reports what is wrong with a request's snapshot
// settings. The default URL needs the application id; snapshotURL makes
// it.
func (m *Manager) checkSnapshots(req Request) error {
	switch {
	case req.SnapshotURL != "" && !req.Snapshots:
		return &RequestError{Field: "snapshotUrl", Problem: "is set but snapshots are off"}
	case req.SnapshotURL != "":
		if err := streams.CheckSnapshotURL(req.SnapshotURL); err != nil {
			return &RequestError{Field: "snapshotUrl", Problem: err.Error()}
		}
	case req.Snapshots && req.Orchestrated:
		return &RequestError{Field: "snapshotUrl", Problem: "is required for processes you start: this server's data directory is not theirs to share"}
	case req.Snapshots && m.cfg.SnapshotDir == "":
		return &RequestError{Field: "snapshotUrl", Problem: "is required: this server has no directory for snapshots"}
	}
	return nil
}

// snapshotURL is the blob store of a checked request's snapshots, "" when
// they are off: its URL, or the application's directory under
// Config.SnapshotDir.
func (m *Manager) snapshotURL(req Request, appID string) (string, error) {
	if !req.Snapshots || req.SnapshotURL != "" {
		return req.SnapshotURL, nil
	}
	dir, err := filepath.Abs(filepath.Join(m.cfg.SnapshotDir, appID))
	if err != nil {
		return "", fmt.Errorf("making the snapshot directory's URL: %w", err)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String(), nil
}

// runningLocked is ErrNotRunning before Run and after it ended. The
// caller holds mu.
func (m *Manager) runningLocked() error {
	if m.ctx == nil || m.ctx.Err() != nil {
		return ErrNotRunning
	}
	return nil
}

// claim marks a deployment busy, so that two operations never start or
// stop it at once. Undeploy claims too while Run shuts down, so claim
// does not ask for a running Manager.
func (m *Manager) claim(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busy[id] {
		return &RequestError{Field: "design", Problem: fmt.Sprintf("%q is being deployed or undeployed; try again", id)}
	}
	m.busy[id] = true
	return nil
}

// claimRunning claims id for a deploy, which needs a running Manager.
func (m *Manager) claimRunning(id string) error {
	m.mu.Lock()
	err := m.runningLocked()
	m.mu.Unlock()
	if err != nil {
		return err
	}
	return m.claim(id)
}

func (m *Manager) unclaim(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.busy, id)
}

// take removes a deployment from the map and returns it.
func (m *Manager) take(id string) *deployment {
	m.mu.Lock()
	defer m.mu.Unlock()
	dep := m.deps[id]
	delete(m.deps, id)
	return dep
}

// Undeploy stops a deployment's generators and instances, and removes
// its record: it is not redeployed on the next start.
func (m *Manager) Undeploy(id string) error {
	return m.undeploy(id, true)
}

// undeploy stops a deployment; with forget, it also removes its record
// (a kept one too, of a deployment that could not be redeployed).
func (m *Manager) undeploy(id string, forget bool) error {
	if err := m.claim(id); err != nil {
		return err
	}
	defer m.unclaim(id)
	if forget {
		if orchestrated, err := m.undeployOrchestrated(id); orchestrated {
			return err
		}
	}
	dep := m.take(id)
	if dep == nil {
		if !forget {
			return &NotDeployedError{ID: id}
		}
		m.mu.Lock()
		_, kept := m.kept[id]
		delete(m.kept, id)
		m.mu.Unlock()
		if !kept {
			return &NotDeployedError{ID: id}
		}
		m.saveRecords()
		return nil
	}
	m.shutdown(dep)
	m.cfg.Monitor.RemoveDeployment(id)
	if forget {
		m.saveRecords()
	}
	return nil
}

// Ready is closed once Run has redeployed the deployments of
// Config.RecordFile (or tried to).
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// HadRecords says whether Config.RecordFile existed when the Manager was
// made, even listing no deployment: a new data directory has none.
func (m *Manager) HadRecords() bool { return m.hadRecords }

// shutdown stops a deployment's generators, then its instances.
func (m *Manager) shutdown(dep *deployment) {
	dep.gens.stopAll()
	dep.stop()
	if err := <-dep.done; err != nil {
		m.log.Warn("deployment stopped with an error", "deployment", dep.info.ID, "err", err)
	}
}

// start makes the topics, the Supervisor and the monitor's view of a
// compiled design, and runs it.
func (m *Manager) start(req Request, d *designer.Design, revision int, compiled *compiler.Compiled) (*deployment, error) {
	topo := compiled.Topology
	info := describeCompiled(d, compiled)
	info.Revision, info.Instances, info.Standbys = revision, req.Instances, *req.Standbys
	info.Guarantee, info.CommitIntervalMs, info.Started = req.Guarantee, req.CommitIntervalMs, time.Now()
	if err := m.ensureTopics(slices.Concat(info.SourceTopics, info.SinkTopics)); err != nil {
		return nil, err
	}
	snapshots, err := m.snapshotURL(req, info.ApplicationID)
	if err != nil {
		return nil, fmt.Errorf("deploying %q: %w", d.ID, err)
	}
	info.SnapshotURL = snapshots
	commit := time.Duration(req.CommitIntervalMs) * time.Millisecond
	cfg := streams.Config{
		ApplicationID:     info.ApplicationID,
		Brokers:           m.cfg.Brokers,
		StateDir:          filepath.Join(m.cfg.StateDir, d.ID),
		CommitInterval:    commit,
		SessionTimeout:    m.cfg.SessionTimeout,
		RebalanceProtocol: m.cfg.RebalanceProtocol,
		StandbyReplicas:   *req.Standbys,
		ClientOptions:     m.cfg.ClientOptions,
		NodeMetrics:       true,
		Logger:            m.log.With("deployment", d.ID),
		Snapshots:         streams.SnapshotConfig{URL: snapshots},
	}
	if req.Guarantee == streams.ExactlyOnce.String() {
		cfg.ProcessingGuarantee = streams.ExactlyOnce
		cfg.TransactionTimeout = streams.ExactlyOnceTransactionTimeout(commit)
	}
	src := &lazySource{adm: kadm.NewClient(m.client)}
	// The Supervisor sees its instances crash and removes them from the
	// group (Supervisor.Crash).
	hook := m.cfg.Monitor.AddDeployment(monitor.DeploymentInfo{
		ID: info.ID, Design: info.Design, DesignName: info.DesignName, Revision: info.Revision,
		ApplicationID: info.ApplicationID, Instances: info.Instances, Standbys: info.Standbys, Guarantee: info.Guarantee,
		CommitInterval: commit, CommitIntervalMs: req.CommitIntervalMs,
		Topology: topo, Started: info.Started,
	}.WithFailureSettings(cfg, streams.DetectedBySupervisor), src)
	cfg.Hooks = []streams.Hook{hook}
	sup, err := streams.NewSupervisor(topo, streams.SupervisorConfig{Config: cfg, Instances: req.Instances})
	if err != nil {
		m.cfg.Monitor.RemoveDeployment(info.ID)
		return nil, fmt.Errorf("deploying %q: %w", d.ID, err)
	}
	src.set(sup)
	m.mu.Lock()
	parent := m.ctx
	m.mu.Unlock()
	ctx, stop := context.WithCancel(parent)
	dep := &deployment{info: info, compiled: compiled, sup: sup, stop: stop, done: make(chan error, 1)}
	dep.gens = newGenerators(m.client, info.SourceTopics, m.log.With("deployment", d.ID))
	go func() { dep.done <- sup.Run(ctx) }()
	m.mu.Lock()
	m.deps[d.ID] = dep
	m.mu.Unlock()
	m.log.Info("deployed", "deployment", d.ID, "revision", revision, "instances", req.Instances, "standbys", *req.Standbys, "guarantee", req.Guarantee)
	return dep, nil
}

// describeCompiled is what a deployment's Info says of its design: its
// topics, stores and operators.
func describeCompiled(d *designer.Design, compiled *compiler.Compiled) Info {
	topo := compiled.Topology
	info := Info{
		ID: d.ID, Design: d.ID, DesignName: d.Name, ApplicationID: designer.ApplicationID(d),
		SourceTopics: nonNil(topo.SourceTopics()), SinkTopics: nonNil(topo.SinkTopics()), Operators: compiled.Operators,
	}
	for _, st := range topo.Stores() {
		info.Stores = append(info.Stores, StoreInfo{Name: st.Name, Type: st.Type, GraceMs: st.Grace.Milliseconds(), Node: compiled.StoreNodes[st.Name],
			Subtopology: st.Subtopology, Join: st.Join, RetentionMs: st.Retention.Milliseconds()})
	}
	return info
}

// lazySource is the monitor's Source of a deployment: the Supervisor,
// which is made after the monitor's hook it needs in its config. It reads
// the lag of a failed instance's tasks from the broker with adm
// (monitor.BrokerLag).
type lazySource struct {
	adm *kadm.Client
	mu  sync.Mutex
	sup *streams.Supervisor
}

func (l *lazySource) CommittedLag(ctx context.Context, group string, readCommitted bool, partitions []streams.TopicPartition) (map[streams.TopicPartition]int64, error) {
	return monitor.GroupLag(ctx, l.adm, group, readCommitted, partitions)
}

var _ monitor.BrokerLag = (*lazySource)(nil)

func (l *lazySource) set(sup *streams.Supervisor) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sup = sup
}

func (l *lazySource) get() *streams.Supervisor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sup
}

func (l *lazySource) Instances() []streams.InstanceInfo {
	if sup := l.get(); sup != nil {
		return sup.Instances()
	}
	return nil
}

func (l *lazySource) OpenWindows(instance, store string) ([]streams.OpenWindow, error) {
	if sup := l.get(); sup != nil {
		return sup.OpenWindows(instance, store)
	}
	return nil, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/streams"
	rtelemetry "github.com/braidstream/braid/runtime/telemetry"
)

// ReaderConfig configures a Reader. Zero fields take the defaults their
// comments give.
type ReaderConfig struct {
	Brokers       []string
	ClientOptions []kgo.Opt
	// Topic is the telemetry topic; default DefaultTopic, created if it
	// does not exist.
	Topic string
	// Monitor receives a deployment per application found, with the
	// application id as its ID unless DeploymentID names another.
	// Required.
	Monitor *monitor.Monitor
	// DeploymentID, when set, names the monitor deployment of an
	// application when its first report arrives (a deployment the
	// caller knows the application under); default the application id.
	DeploymentID func(applicationID string) string
	// GoneAfter is how long a process may send no report before its
	// instances are shown gone; default 3 s, at least twice a report's
	// interval.
	GoneAfter time.Duration
	// ForgetAfter is how long a gone process stays shown; default 10
	// minutes. An application with no process left is removed.
	ForgetAfter time.Duration
	// Lookback is how far back in the topic the Reader starts; default a
	// minute.
	Lookback time.Duration
	// ReplicationFactor of the topic when the Reader creates it; 0:
	// min(3, the cluster's brokers), as streams.Config's.
	ReplicationFactor int
	// OnDesign, when set, receives an application's description and
	// design file when the first report with its design arrives, and
	// again when the design changes; OnRemoved, with the deployment's
	// ID, when the application is removed. Both run on Run's goroutine.
	OnDesign  func(info monitor.DeploymentInfo, design []byte)
	OnRemoved func(deploymentID string)
	// OnProcesses, when set, receives an application's processes as
	// they stand, on every report and at least every second, by
	// deployment ID (those a gone process ran shown crashed). It runs
	// on Run's goroutine.
	OnProcesses func(deploymentID string, procs []monitor.Process)
	// Local reports the applications the caller runs itself and shows
	// through their own hooks: their reports are skipped.
	Local  func(applicationID string) bool
	Logger *slog.Logger
}

// Validate reports every problem of the config at once.
func (c ReaderConfig) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("Brokers: no broker given"))
	}
	if c.Monitor == nil {
		errs = append(errs, errors.New("Monitor: nil"))
	}
	for name, d := range map[string]time.Duration{"GoneAfter": c.GoneAfter, "ForgetAfter": c.ForgetAfter, "Lookback": c.Lookback} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s: %v is negative", name, d))
		}
	}
	if c.GoneAfter != 0 && c.GoneAfter < 2*rtelemetry.MinInterval {
		errs = append(errs, fmt.Errorf("GoneAfter: %v is below two report intervals (%v)", c.GoneAfter, 2*rtelemetry.MinInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry reader config: %w", err)
	}
	return nil
}

func (c ReaderConfig) withDefaults() ReaderConfig {
	if c.Topic == "" {
		c.Topic = rtelemetry.DefaultTopic
	}
	if c.GoneAfter == 0 {
		c.GoneAfter = 3 * time.Second
	}
	if c.ForgetAfter == 0 {
		c.ForgetAfter = 10 * time.Minute
	}
	if c.Lookback == 0 {
		c.Lookback = time.Minute
	}
	if c.Local == nil {
		c.Local = func(string) bool { return false }
	}
	if c.DeploymentID == nil {
		c.DeploymentID = func(app string) string { return app }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Reader turns the telemetry topic back into the monitor's deployments.
type Reader struct {
	cfg ReaderConfig
	cl  *kgo.Client
	// apps is Run's alone.
	apps map[string]*remoteApp
}

// NewReader returns a Reader with its client.
func NewReader(cfg ReaderConfig) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	opts := append([]kgo.Opt{}, cfg.ClientOptions...)
	opts = append(opts, kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(time.Now().Add(-cfg.Lookback).UnixMilli())),
		// A topic created after the server started is found within
		// seconds.
		kgo.MetadataMaxAge(5*time.Second))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the telemetry reader's client: %w", err)
	}
	return &Reader{cfg: cfg, cl: cl, apps: make(map[string]*remoteApp)}, nil
}

// Run reads reports until ctx ends, then removes the deployments it added
// and closes its client.
func (r *Reader) Run(ctx context.Context) error {
	defer r.cl.Close()
	defer func() {
		for id := range r.apps {
			r.remove(id)
		}
	}()
	if err := rtelemetry.EnsureTopic(ctx, r.cl, r.cfg.Topic, r.cfg.ReplicationFactor, r.cfg.Logger); err != nil && ctx.Err() == nil {
		r.cfg.Logger.Warn("telemetry: the topic could not be created; reading it once it exists", "err", err)
	}
	for {
		// Polls end every second so that a process that went quiet is
		// seen gone without a report to wake the loop.
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := r.cl.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				r.cfg.Logger.Warn("telemetry: reading the topic", "topic", topic, "partition", p, "err", err)
			}
		})
		fetches.EachRecord(r.handle)
		r.expire(time.Now())
	}
}

// handle applies one record of the topic.
func (r *Reader) handle(rec *kgo.Record) {
	var rep rtelemetry.Report
	if err := json.Unmarshal(rec.Value, &rep); err != nil {
		r.cfg.Logger.Warn("telemetry: skipping a record that is no report", "topic", rec.Topic, "partition", rec.Partition,
			"offset", rec.Offset, "err", err)
		return
	}
	if rep.Version != rtelemetry.ReportVersion || rep.App == "" || rep.Process == "" || r.cfg.Local(rep.App) {
		return
	}
	app := r.apps[rep.App]
	if app == nil {
		app = newRemoteApp(rep, r.cfg)
		r.apps[rep.App] = app
	}
	app.apply(rep, r.cfg.Logger.With("app", rep.App, "process", rep.Process, "offset", rec.Offset))
	if d := rep.Deployment.Design; len(d) > 0 && !bytes.Equal(d, app.design) {
		app.design = d
		if r.cfg.OnDesign != nil {
			r.cfg.OnDesign(app.info, d)
		}
	}
}

// expire shows the processes that stopped reporting as gone, forgets
// those gone for long and removes the applications with none left.
func (r *Reader) expire(now time.Time) {
	for id, app := range r.apps {
		if app.expire(now) {
			r.remove(id)
		}
	}
}

// remove forgets an application.
func (r *Reader) remove(app string) {
	id := r.apps[app].info.ID
	delete(r.apps, app)
	if r.cfg.Local(app) {
		// The caller runs it now, under the same deployment id (one
		// that ran in other processes, redeployed here): the monitor's
		// deployment is the caller's.
		return
	}
	r.cfg.Monitor.RemoveDeployment(id)
	if r.cfg.OnRemoved != nil {
		r.cfg.OnRemoved(id)
	}
}

// remoteApp is one application the topic reports on: the monitor's
// deployment, fed by the reports of each of its processes.
type remoteApp struct {
	id      string
	info    monitor.DeploymentInfo
	design  []byte // the design last reported, nil before any
	cfg     ReaderConfig
	hook    streams.Hook
	src     *remoteSource
	procs   map[string]*process
	handoff handoffs
}

// process is the latest report of one process of an application.
type process struct {
	last rtelemetry.Report
	// seen is when last was written, by the process's clock.
	seen time.Time
}

func newRemoteApp(first rtelemetry.Report, cfg ReaderConfig) *remoteApp {
	info := deploymentInfo(first)
	info.ID = cfg.DeploymentID(first.App)
	src := &remoteSource{}
	app := &remoteApp{id: first.App, info: info, cfg: cfg, src: src, procs: make(map[string]*process), handoff: newHandoffs()}
	app.hook = cfg.Monitor.AddDeployment(info, src)
	return app
}

// deploymentInfo is the monitor's description of the application a
// report comes from, named by its application id.
func deploymentInfo(rep rtelemetry.Report) monitor.DeploymentInfo {
	d := rep.Deployment
	return monitor.DeploymentInfo{ID: rep.App, ApplicationID: rep.App, Design: d.DesignID, DesignName: d.DesignName,
		Revision: d.Revision, Instances: d.Instances, Standbys: d.Standbys, Guarantee: d.Guarantee,
		CommitInterval: d.CommitInterval, CommitIntervalMs: d.CommitInterval.Milliseconds(),
		Stores: d.Stores, SinkNodes: d.SinkNodes}
}

// apply takes a report of one of the application's processes.
func (a *remoteApp) apply(rep rtelemetry.Report, log *slog.Logger) {
	prev := a.procs[rep.Process]
	if prev != nil && prev.last.Started == rep.Started && rep.Seq <= prev.last.Seq {
		return // read again: the Reader started in the middle of a retried batch
	}
	seen := time.UnixMilli(rep.Time)
	if prev != nil && prev.last.Started != rep.Started {
		// The process restarted: its former life ended at its last
		// report, and the instances it ran then are gone.
		a.handoff.ended(prev.last)
	}
	a.procs[rep.Process] = &process{last: rep, seen: seen}
	for _, ev := range rep.Events {
		a.handoff.observe(rep, ev)
		if err := ev.Replay(a.hook); err != nil {
			log.Warn("telemetry: skipping an event", "err", err)
		}
	}
	if rep.Dropped > 0 {
		log.Warn("telemetry: the process dropped events its queue had no room for", "dropped", rep.Dropped)
	}
	a.handoff.owners(rep)
	now := time.Now()
	a.handoff.settle(a, now)
	a.publish(now)
}

// expire reports whether the application has no process left to show.
func (a *remoteApp) expire(now time.Time) bool {
	for name, p := range a.procs {
		if now.Sub(p.seen) > a.cfg.ForgetAfter {
			delete(a.procs, name)
		}
	}
	if len(a.procs) == 0 {
		return true
	}
	a.handoff.settle(a, now)
	a.publish(now)
	return false
}

// publish hands the source the instances as they stand at now.
func (a *remoteApp) publish(now time.Time) {
	var infos []streams.InstanceInfo
	windows := make(map[string]map[string][]streams.OpenWindow)
	for _, p := range a.procs {
		gone := a.gone(p, now)
		for _, w := range p.last.Instances {
			info := w.Info()
			if gone {
				info = goneInstance(info, p)
			} else {
				windows[info.ID] = w.Windows
			}
			infos = append(infos, info)
		}
	}
	slices.SortFunc(infos, func(x, y streams.InstanceInfo) int { return strings.Compare(x.ID, y.ID) })
	a.src.set(infos, windows)
	if a.cfg.OnProcesses != nil {
		a.cfg.OnProcesses(a.info.ID, a.processes(now))
	}
}

// processes are the application's processes as they stand at now, by
// name.
func (a *remoteApp) processes(now time.Time) []monitor.Process {
	out := make([]monitor.Process, 0, len(a.procs))
	for _, p := range a.procs {
		mp := monitor.Process{Process: p.last.Process, Revision: p.last.Deployment.Revision, State: monitor.ProcessReporting,
			LastReport: p.seen.UnixMilli(), Instances: make([]monitor.ProcessInstance, 0, len(p.last.Instances))}
		gone := a.gone(p, now)
		switch {
		case p.last.Final:
			mp.State = monitor.ProcessStopped
		case gone:
			mp.State = monitor.ProcessGone
		}
		for _, w := range p.last.Instances {
			info := w.Info()
			if gone {
				info = goneInstance(info, p)
			}
			mp.Instances = append(mp.Instances, monitor.ProcessInstance{ID: info.ID, State: monitor.InstanceStateName(info)})
		}
		out = append(out, mp)
	}
	slices.SortFunc(out, func(x, y monitor.Process) int { return strings.Compare(x.Process, y.Process) })
	return out
}

// gone reports whether p stopped reporting without a last report.
func (a *remoteApp) gone(p *process, now time.Time) bool {
	return !p.last.Final && now.Sub(p.seen) > a.cfg.GoneAfter
}

// goneInstance is how an instance of a process that stopped reporting is
// shown: crashed since its last report, with nothing assigned.
func goneInstance(info streams.InstanceInfo, p *process) streams.InstanceInfo {
	if info.State != streams.InstanceRunning {
		return info
	}
	return streams.InstanceInfo{
		ID: info.ID, State: streams.InstanceCrashed, Since: p.seen,
		Err:   fmt.Errorf("gone: process %s sent no report since %s", p.last.Process, p.seen.UTC().Format("15:04:05.000")),
		Stats: streams.Stats{ApplicationID: info.Stats.ApplicationID, InstanceID: info.ID, State: streams.NotRunning},
	}
}

// remoteSource is the monitor's Source of a remote application: the
// instances of its processes' latest reports.
type remoteSource struct {
	// mu guards the fields below: the Reader sets them, the monitor's
	// Run reads them.
	mu        sync.Mutex
	instances []streams.InstanceInfo
	windows   map[string]map[string][]streams.OpenWindow
}

func (s *remoteSource) set(instances []streams.InstanceInfo, windows map[string]map[string][]streams.OpenWindow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instances, s.windows = instances, windows
}

func (s *remoteSource) Instances() []streams.InstanceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.instances)
}

func (s *remoteSource) OpenWindows(instance, store string) ([]streams.OpenWindow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.windows[instance][store], nil
}

var _ monitor.Source = (*remoteSource)(nil)

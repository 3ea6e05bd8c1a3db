package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
)

// Applications that run in other processes (braid run, exported
// programs) report through the telemetry topic; the server only watches
// them. Watch gives one an Info, from the design file its processes
// report, so that the live page can draw it as it draws a deployment,
// and WatchProcesses keeps what each of its processes last reported, so
// that List shows it beside the deployments, marked Watched, with its
// processes and its state.

// RemoteError says an operation needs a deployment of this server, and
// id is an application other processes run: its instances are driven by
// whoever started them.
type RemoteError struct {
	ID, Op string
	// Reason says what this server lacks to do Op.
	Reason string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: %q runs in other processes, which report to this server: %s", e.Op, e.ID, e.Reason)
}

// CommandSender sends a command, "crash", "crash-wipe", "stop" or
// "start", to an
// instance of an application other processes run; a control.Sender is
// one.
type CommandSender interface {
	Send(ctx context.Context, app, instance, verb string) error
}

// verbs are the commands of the instance operations, by the kind the
// monitor logs.
var verbs = map[string]string{"crashed": "crash", "crash-wiped": "crash-wipe", "stopped": "stop", "started": "start"}

// command sends an instance operation on a watched application to its
// processes, when the Manager has a Config.Commands; the instance itself
// reports what became of it.
func (m *Manager) command(id, instance, kind string) error {
	verb := verbs[kind]
	if m.cfg.Commands == nil {
		return &RemoteError{ID: id, Op: verb + " " + instance, Reason: "this server has no control secret to sign commands to them with"}
	}
	app, err := m.remoteApplication(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.cfg.Commands.Send(ctx, app, instance, verb); err != nil {
		return fmt.Errorf("%s %s of %q: %w", verb, instance, id, err)
	}
	m.cfg.Monitor.InstanceEvent(id, instance, kind)
	return nil
}

// watchedApps holds the Infos of the applications Watch was given and
// the processes WatchProcesses was given, by deployment id.
type watchedApps struct {
	// mu guards infos and procs. It is taken after Manager.mu, never
	// before.
	mu    sync.Mutex
	infos map[string]Info
	procs map[string][]monitor.Process
}

// States of a watched application (Info.State), from its processes.
const (
	// WatchedRunning: every instance of its reporting processes runs.
	WatchedRunning = "running"
	// WatchedDegraded: a process reports, but an instance of it does
	// not run (crashed, stopped, failed), or another process is gone.
	WatchedDegraded = "degraded"
	// WatchedGone: no process reports; some went silent.
	WatchedGone = "gone"
	// WatchedStopped: every process stopped gracefully.
	WatchedStopped = "stopped"
)

// Watch describes an application that runs elsewhere, from what its
// processes report (see package telemetry): its deployment info and its
// design file. Get then answers for info.ID with an Info marked Remote.
func (m *Manager) Watch(info monitor.DeploymentInfo, design []byte) error {
	d, err := designer.Decode(design)
	if err != nil {
		return fmt.Errorf("watching %q: decoding its design: %w", info.ID, err)
	}
	compiled, err := compiler.Compile(d, compiler.Options{})
	if err != nil {
		return fmt.Errorf("watching %q: compiling its design %q: %w", info.ID, d.ID, err)
	}
	in := describeCompiled(d, compiled)
	in.ID, in.ApplicationID, in.Revision = info.ID, info.ApplicationID, info.Revision
	in.Instances, in.Standbys, in.Guarantee, in.CommitIntervalMs = info.Instances, info.Standbys, info.Guarantee, info.CommitIntervalMs
	in.Started, in.Generators, in.Remote, in.DesignDoc = info.Started, []GeneratorInfo{}, true, design
	in.Commands, in.Watched = m.cfg.Commands != nil, true
	m.watched.mu.Lock()
	defer m.watched.mu.Unlock()
	if m.watched.infos == nil {
		m.watched.infos = make(map[string]Info)
	}
	m.watched.infos[info.ID] = in
	return nil
}

// WatchProcesses takes the processes of an application that runs
// elsewhere as they stand (package telemetry's Reader gives them): its
// Info then lists them, with the state they add up to.
func (m *Manager) WatchProcesses(id string, procs []monitor.Process) {
	m.watched.mu.Lock()
	defer m.watched.mu.Unlock()
	if m.watched.procs == nil {
		m.watched.procs = make(map[string][]monitor.Process)
	}
	m.watched.procs[id] = procs
}

// Unwatch forgets an application Watch described.
func (m *Manager) Unwatch(id string) {
	m.watched.mu.Lock()
	defer m.watched.mu.Unlock()
	delete(m.watched.infos, id)
	delete(m.watched.procs, id)
}

// watchedInfo returns the Info Watch made for id, with its processes
// as they last reported.
func (m *Manager) watchedInfo(id string) (Info, bool) {
	m.watched.mu.Lock()
	defer m.watched.mu.Unlock()
	in, ok := m.watched.infos[id]
	if !ok {
		return Info{}, false
	}
	procs := m.watched.procs[id]
	in.Processes = make([]ProcessStatus, len(procs))
	for i, p := range procs {
		in.Processes[i] = ProcessStatus{Process: p.Process, Revision: p.Revision, State: p.State, LastReport: p.LastReport, Instances: p.Instances}
	}
	in.State = watchedState(procs)
	return in, true
}

// watchedInfos are the Infos of the watched applications, but those of
// ids in skip (deployments of this server that report too).
func (m *Manager) watchedInfos(skip map[string]bool) []Info {
	m.watched.mu.Lock()
	ids := slices.Collect(maps.Keys(m.watched.infos))
	m.watched.mu.Unlock()
	var out []Info
	for _, id := range ids {
		if info, ok := m.watchedInfo(id); ok && !skip[id] {
			out = append(out, info)
		}
	}
	return out
}

// watchedState is the state a watched application's processes add up
// to.
func watchedState(procs []monitor.Process) string {
	reporting, gone := 0, false
	degraded := false
	for _, p := range procs {
		switch p.State {
		case monitor.ProcessReporting:
			reporting++
			for _, in := range p.Instances {
				if in.State != "running" && in.State != "rebalancing" {
					degraded = true
				}
			}
		case monitor.ProcessGone:
			gone = true
		}
	}
	switch {
	case reporting == 0 && gone:
		return WatchedGone
	case reporting == 0:
		return WatchedStopped
	case degraded || gone:
		return WatchedDegraded
	}
	return WatchedRunning
}

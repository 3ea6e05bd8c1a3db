package deploy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
)

// Applications that run in other processes (braid run, exported
// programs) report through the telemetry topic; the server only watches
// them. Watch gives one an Info, from the design file its processes
// report, so that the live page can draw it as it draws a deployment.

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

// watchedApps holds the Infos of the applications Watch was given.
type watchedApps struct {
	// mu guards infos. It is taken after Manager.mu, never before.
	mu    sync.Mutex
	infos map[string]Info
}

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
	in.Commands = m.cfg.Commands != nil
	m.watched.mu.Lock()
	defer m.watched.mu.Unlock()
	if m.watched.infos == nil {
		m.watched.infos = make(map[string]Info)
	}
	m.watched.infos[info.ID] = in
	return nil
}

// Unwatch forgets an application Watch described.
func (m *Manager) Unwatch(id string) {
	m.watched.mu.Lock()
	defer m.watched.mu.Unlock()
	delete(m.watched.infos, id)
}

// watchedInfo returns the Info Watch made for id.
func (m *Manager) watchedInfo(id string) (Info, bool) {
	m.watched.mu.Lock()
	defer m.watched.mu.Unlock()
	in, ok := m.watched.infos[id]
	return in, ok
}

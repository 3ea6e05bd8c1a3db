package process

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"

	"github.com/braidstream/braid/runtime/clientconfig"
	"github.com/braidstream/braid/runtime/control"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/braidstream/braid/runtime/telemetry"
)

// CrashExitCode is the status a process exits with when a crash command
// ends it.
const CrashExitCode = 3

// WipeExitCode is the status a process exits with when a crash-wipe
// command ends it, after deleting its instance's state dir: whoever
// started it (Kubernetes, systemd, a shell loop) starts it again, and it
// restores every store from the changelogs.
const WipeExitCode = 4

// Config configures a Process.
type Config struct {
	// Runner configures the process's instances; see
	// streams.RunnerConfig. Its Config.Hooks get the Publisher's hook
	// added, and, with telemetry, Config.NodeMetrics is set: a live page
	// shows each node's rates.
	Runner streams.RunnerConfig
	// TelemetryTopic is where the instances report (DefineFlags'
	// default is telemetry.DefaultTopic); "" reports nowhere.
	TelemetryTopic string
	// ControlTopic is where commands come from; default
	// control.DefaultTopic.
	ControlTopic string
	// ControlSecret verifies the commands. Without one every command for
	// the application is refused, and logged.
	ControlSecret []byte
	// Client is the client configuration the Runner's
	// Config.ClientOptions were made of (Flags.Config sets both): Run
	// checks it against the brokers first (clientconfig.Config.Check),
	// so that a refused login or an untrusted certificate ends the
	// process at once, saying which. The zero Config checks nothing.
	Client clientconfig.Config
	// Design describes what runs, for the reports.
	Design Design
	// Exit ends the process for a crash command of its only instance;
	// default os.Exit.
	Exit func(code int)
	// Stderr gets the line a crash command leaves before the exit;
	// default os.Stderr.
	Stderr io.Writer
}

// Design is the design a process runs, as its reports name it.
type Design struct {
	// ID, Name and Revision name it; Revision is 0 for a design file.
	ID, Name string
	Revision int
	// File is the design file (JSON), from which a server draws the
	// application's live page; nil for none.
	File []byte
}

// Process is the operating-system process of one or more instances of an
// application: a streams.Runner, a telemetry.Publisher reporting its
// instances (unless Config.TelemetryTopic is empty) and a
// control.Listener carrying out the commands for them.
type Process struct {
	cfg       Config
	runner    *streams.Runner
	sup       *streams.Supervisor
	instances []string
	// pub is nil without a telemetry topic.
	pub      *telemetry.Publisher
	commands *control.Listener
}

// New checks cfg and makes the process's Runner, Publisher and Listener.
// Nothing talks to Kafka before Run.
func New(topo *streams.Topology, cfg Config) (*Process, error) {
	if cfg.Exit == nil {
		cfg.Exit = os.Exit
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	rc := cfg.Runner.WithDefaults()
	if rc.Config.Logger == nil {
		rc.Config.Logger = slog.Default()
	}
	// The Runner's problems first, all of them, before the Publisher
	// (whose hook goes into the Runner's config) checks its own.
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("creating process: %w", err)
	}
	p := &Process{cfg: cfg}
	rc.Config.Hooks = slices.Clone(rc.Config.Hooks)
	if cfg.TelemetryTopic != "" {
		pub, err := newPublisher(topo, rc, cfg)
		if err != nil {
			return nil, fmt.Errorf("creating process: %w", err)
		}
		p.pub = pub
		rc.Config.NodeMetrics = true
		rc.Config.Hooks = append(rc.Config.Hooks, pub.Hook())
	}
	var err error
	if p.runner, err = streams.NewRunner(topo, rc); err != nil {
		p.close()
		return nil, fmt.Errorf("creating process: %w", err)
	}
	p.sup, p.instances = p.runner.Supervisor(), p.runner.InstanceIDs()
	if p.pub != nil {
		p.pub.Attach(p.sup)
	}
	app := p.runner.Config().Config.ApplicationID
	if p.commands, err = control.NewListener(control.ListenerConfig{Brokers: rc.Config.Brokers, ClientOptions: rc.Config.ClientOptions,
		Topic: cfg.ControlTopic, Secret: cfg.ControlSecret, App: app, Instances: func() []string { return p.instances },
		Handle: p.command, Logger: rc.Config.Logger}); err != nil {
		p.close()
		return nil, fmt.Errorf("creating process: %w", err)
	}
	return p, nil
}

// newPublisher makes the Publisher of the instances rc describes.
func newPublisher(topo *streams.Topology, rc streams.RunnerConfig, cfg Config) (*telemetry.Publisher, error) {
	c := rc.Config
	return telemetry.NewPublisher(telemetry.PublisherConfig{Brokers: c.Brokers, ClientOptions: c.ClientOptions,
		Topic: cfg.TelemetryTopic, ReplicationFactor: c.ReplicationFactor, Process: rc.InstanceID, Logger: c.Logger, Topology: topo,
		Deployment: telemetry.Deployment{ApplicationID: c.ApplicationID, DesignID: cfg.Design.ID, DesignName: cfg.Design.Name,
			Revision: cfg.Design.Revision, Instances: rc.Instances, Standbys: c.StandbyReplicas, Guarantee: c.ProcessingGuarantee.String(),
			// The instances' interval: the runtime's default for the
			// guarantee unless one was given.
			CommitInterval: c.WithDefaults().CommitInterval, Design: cfg.Design.File}})
}

// Runner returns the process's Runner.
func (p *Process) Runner() *streams.Runner { return p.runner }

// Run runs the instances with the Runner (which creates the missing sink
// topics, waits for the source topics, and ends with the error of an
// instance that fails), the reports and the commands starting once the
// topics are there, until ctx ends or an instance fails; see
// streams.Runner.Run. The goroutines Run starts it stops and waits for
// before it returns; the last report, sent after the instances stopped,
// shows them stopped. A Process runs once.
func (p *Process) Run(ctx context.Context) error {
	app := p.runner.Config().Config.ApplicationID
	if !p.cfg.Client.IsZero() {
		if err := p.cfg.Client.Check(ctx, p.runner.Config().Config.Brokers); err != nil {
			p.close()
			return fmt.Errorf("running %s: %w", app, err)
		}
	}
	if err := p.runner.Prepare(ctx); err != nil || ctx.Err() != nil {
		// Nothing ran: the clients made for it are closed here.
		p.close()
		if err != nil {
			return fmt.Errorf("running %s: %w", app, err)
		}
		return nil // stopped while waiting
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	// The reports outlive the instances, so that the last one, final,
	// shows them stopped.
	reportCtx, stopReports := context.WithCancel(context.Background())
	if p.pub != nil {
		wg.Go(func() { _ = p.pub.Run(reportCtx) })
	}
	wg.Go(func() { _ = p.commands.Run(ctx) })
	err := p.runner.Run(ctx)
	cancel()
	stopReports()
	wg.Wait()
	return err
}

// close closes the clients of a Process that does not run.
func (p *Process) close() {
	if p.pub != nil {
		p.pub.Close()
	}
	if p.commands != nil {
		p.commands.Close()
	}
}

// command carries out a verified command. A crash of the process's only
// instance ends the process at once, without a word to the group, a
// flush or a commit: a real failure, which the group notices at the
// session timeout and the orchestrator restarts. With several instances
// the one crashes under the process's Supervisor, which sees it and
// removes it from the group. A crash-wipe of the only instance crashes it
// under the Supervisor (which closes its stores), deletes its state dir
// and exits with WipeExitCode; with several, the Supervisor crashes,
// wipes and starts the one again.
func (p *Process) command(c control.Command) error {
	switch c.Verb {
	case control.Crash:
		if len(p.instances) == 1 {
			fmt.Fprintf(p.cfg.Stderr, "instance %s crashed by a command from the server: exiting with status %d\n", c.Instance, CrashExitCode)
			p.cfg.Exit(CrashExitCode)
			return nil
		}
		return p.sup.Crash(c.Instance)
	case control.CrashWipe:
		if len(p.instances) == 1 {
			return p.crashWipeExit(c.Instance)
		}
		return p.sup.CrashAndWipe(c.Instance)
	case control.Stop:
		return p.sup.Stop(c.Instance)
	default:
		return p.sup.Start(c.Instance)
	}
}

// crashWipeExit crashes the process's only instance, deletes its state
// dir and exits with WipeExitCode. A failure leaves the process running,
// its instance crashed, and is the command's error.
func (p *Process) crashWipeExit(instance string) error {
	if err := p.sup.Crash(instance); err != nil {
		return err
	}
	if err := p.sup.Wipe(instance); err != nil {
		return err
	}
	fmt.Fprintf(p.cfg.Stderr, "instance %s crashed and its state dir %s deleted by a command from the server: exiting with status %d\n",
		instance, p.sup.StateDir(instance), WipeExitCode)
	p.cfg.Exit(WipeExitCode)
	return nil
}

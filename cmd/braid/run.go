package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/control"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/braidstream/braid/telemetry"
)

// runOptions are what `braid run` runs: a design file and how.
type runOptions struct {
	// path is the design file.
	path string
	// runner is what the runtime's flags say (streams.DefineRunnerFlags);
	// an empty ApplicationID stands for the design's
	// (designer.ApplicationID).
	runner streams.RunnerConfig
	// telemetryTopic is where the instances report, for braid serve to
	// show them; "" for nowhere.
	telemetryTopic string
	// control is where commands from a server come from, and the
	// secret that verifies them.
	control controlSettings
	// stdout gets the lines meant for the user: what runs, which source
	// topics are waited for, which sink topics were created.
	stdout io.Writer
	// design, when set, is the design itself, in place of the file at
	// path, which then only names it (braid run --deployment runs the
	// config topic's); revision is the deployment revision it is, for
	// the telemetry reports (run_deployment.go).
	design   []byte
	revision int
}

// runner is one `braid run`: a compiled design and the streams.Runner
// that runs its instances in this process, as members of the
// application's group with whatever other processes run it (programs
// braid export wrote among them, which run a streams.Runner too), with
// what only braid run adds: telemetry and the server's commands.
type runner struct {
	opts      runOptions
	appID     string
	instances []string
	log       *slog.Logger
	// hooks are added to every instance's Config.Hooks. newRunner puts
	// its own in before it builds the Runner; one more is one more
	// append there.
	hooks []streams.Hook
	proc  *streams.Runner
	sup   *streams.Supervisor
	// pub reports the instances on the telemetry topic; nil without one.
	pub *telemetry.Publisher
	// commands carries out the server's crash, stop and start.
	commands *control.Listener
	// exit ends the process at once, for a crash command.
	exit func(code int)
}

func runRun(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("run", "braid run design.json [--brokers host:port,...] [--app-id ID] [--instance-id ID] [--instances N]\n"+
		"                 [--state-dir DIR] [--guarantee at-least-once|exactly-once] [--standbys N]\n"+
		"                 [--session-timeout D] [--commit-interval D]\n"+
		"       braid run --deployment ID [--brokers host:port,...] [--instance-id ID] [--instances N] [--state-dir DIR]\n"+
		"                 [--session-timeout D] [--static-membership]\n\n"+
		"Runs a design in this process as --instances instances of its application. Every process that\n"+
		"runs the same design with the same --app-id joins one consumer group, which spreads the tasks over\n"+
		"all their instances. Source topics must exist: run waits for missing ones, checking every second.\n"+
		"Missing sink topics are created with the broker's default partitions and replication factor.\n"+
		"With --deployment, run takes the design and its settings from the deployment the designer wrote to\n"+
		"the config topic, waits for it, and moves to each new revision in turn with the deployment's other processes.", stdout)
	flags := streams.DefineRunnerFlags(fs, "", "application id, the consumer group's id and internal topics' prefix (default: the design's, braid-<design id>)")
	dep := deploymentFlags(fs)
	ctl := controlFlags(fs)
	telemetryTopic := fs.String("telemetry-topic", telemetry.DefaultTopic, "topic the instances report their state and events on, four times a second, for braid serve to show; empty: report nowhere")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if dep.id != "" {
		return runDeployment(ctx, fs, flags, dep, files, ctl, *telemetryTopic, stdout)
	}
	if len(files) != 1 {
		return fmt.Errorf("run: want one design file, got %d (%q)", len(files), files)
	}
	if err := ctl.load(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	rc, err := flags.Config()
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	r, err := newRunner(runOptions{path: files[0], runner: rc, telemetryTopic: *telemetryTopic, control: *ctl, stdout: stdout})
	if err != nil {
		return err
	}
	return r.run(ctx)
}

// newRunner reads and compiles the design and makes the Runner of its
// instances. Nothing talks to Kafka before run.
func newRunner(opts runOptions) (*runner, error) {
	d, compiled, err := opts.loadDesign()
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	r := &runner{opts: opts, log: slog.Default()}
	rc := opts.runner
	if rc.Config.ApplicationID == "" {
		rc.Config.ApplicationID = designer.ApplicationID(d)
	}
	rc.Config.NodeMetrics, rc.Config.Logger, rc.Out = true, r.log, opts.stdout
	rc = rc.WithDefaults()
	r.appID = rc.Config.ApplicationID
	c := rc.Config
	if opts.telemetryTopic != "" {
		design, err := designer.Encode(d)
		if err != nil {
			return nil, fmt.Errorf("run: encoding the design for telemetry: %w", err)
		}
		r.pub, err = telemetry.NewPublisher(telemetry.PublisherConfig{Brokers: c.Brokers, Topic: opts.telemetryTopic, Design: design,
			Process: rc.InstanceID, Logger: r.log, Deployment: monitor.DeploymentInfo{
				ID: r.appID, Design: d.ID, DesignName: d.Name, Revision: opts.revision, ApplicationID: r.appID, Instances: rc.Instances,
				Standbys: c.StandbyReplicas, Guarantee: c.ProcessingGuarantee.String(),
				// The instances' interval: the runtime's default for the
				// guarantee unless --commit-interval set one.
				CommitInterval: c.WithDefaults().CommitInterval, Topology: compiled.Topology,
			}})
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		r.hooks = append(r.hooks, r.pub.Hook())
	}
	rc.Config.Hooks = r.hooks
	if r.proc, err = streams.NewRunner(compiled.Topology, rc); err != nil {
		return nil, fmt.Errorf("run: %s: %w", opts.path, err)
	}
	r.sup, r.instances = r.proc.Supervisor(), r.proc.InstanceIDs()
	if r.pub != nil {
		r.pub.Attach(r.sup)
	}
	r.exit = os.Exit
	if r.commands, err = control.NewListener(control.ListenerConfig{Brokers: c.Brokers, Topic: opts.control.topic,
		Secret: opts.control.secret, App: r.appID, Instances: func() []string { return r.instances }, Handle: r.command,
		Logger: r.log}); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return r, nil
}

// loadDesign reads, decodes and compiles a design file, as braid compile
// does. Its errors name the file; a design with problems lists them.
func loadDesign(path string) (*designer.Design, *compiler.Compiled, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the design: %w", err)
	}
	return compileDesign(path, data)
}

// compileDesign decodes and compiles a design named path in errors.
func compileDesign(path string, data []byte) (*designer.Design, *compiler.Compiled, error) {
	d, err := designer.Decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	c, err := compiler.Compile(d, compiler.Options{})
	var problems designer.Problems
	if errors.As(err, &problems) {
		lines := make([]string, len(problems))
		for i, p := range problems {
			lines[i] = "\n  " + problemLine(p)
		}
		return nil, nil, fmt.Errorf("%s: %s:%s", path, countNoun(len(problems), "problem"), strings.Join(lines, ""))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, c, nil
}

// run runs the instances with the streams.Runner (which creates the
// missing sink topics, waits for the source topics, and ends with the
// error of an instance that fails), the telemetry reports and the
// server's commands starting once the topics are there. The goroutines
// run starts it stops and waits for before it returns.
func (r *runner) run(ctx context.Context) error {
	if err := r.proc.Prepare(ctx); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if ctx.Err() != nil {
		return nil // stopped while waiting
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	// The reports outlive the instances, so that the last one, final,
	// shows them stopped.
	reportCtx, stopReports := context.WithCancel(context.Background())
	if r.pub != nil {
		wg.Go(func() { _ = r.pub.Run(reportCtx) })
	}
	wg.Go(func() { _ = r.commands.Run(ctx) })
	err := r.proc.Run(ctx)
	cancel()
	stopReports()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// command carries out a verified command from the server. A crash of
// the process's only instance ends the process at once, without a word
// to the group, a flush or a commit: a real failure, which the group
// notices at the session timeout and the orchestrator restarts. With
// several instances the one crashes under the process's Supervisor,
// which sees it and removes it from the group.
func (r *runner) command(c control.Command) error {
	switch c.Verb {
	case control.Crash:
		if len(r.instances) == 1 {
			fmt.Fprintf(os.Stderr, "braid: run: instance %s crashed by a command from the server\n", c.Instance)
			r.exit(3)
			return nil
		}
		return r.sup.Crash(c.Instance)
	case control.Stop:
		return r.sup.Stop(c.Instance)
	default:
		return r.sup.Start(c.Instance)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/clientconfig"
	rprocess "github.com/braidstream/braid/runtime/process"
	"github.com/braidstream/braid/runtime/streams"
)

// runOptions are what `braid run` runs: a design file and how.
type runOptions struct {
	// path is the design file.
	path string
	// runner is what the runtime's flags say (process.DefineFlags);
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
	// client is the client configuration (--client-config) whose
	// options runner.Config.ClientOptions holds, which the process
	// checks against the brokers before it runs.
	client clientconfig.Config
}

// runner is one `braid run`: a compiled design and the process.Process
// that runs its instances in this process, as members of the
// application's group with whatever other processes run it (programs
// braid export wrote among them, which run a process.Process too), with
// telemetry and the server's commands.
type runner struct {
	opts      runOptions
	appID     string
	instances []string
	log       *slog.Logger
	// hooks are added to every instance's Config.Hooks. newRunner puts
	// them in before it builds the process; one more is one more append
	// there.
	hooks []streams.Hook
	proc  *rprocess.Process
	sup   *streams.Supervisor
}

func runRun(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("run", "braid run design.json [--brokers host:port,...] [--app-id ID] [--instance-id ID] [--instances N]\n"+
		"                 [--state-dir DIR] [--guarantee at-least-once|exactly-once] [--standbys N]\n"+
		"                 [--session-timeout D] [--commit-interval D] [--replication-factor N] [--client-config FILE]\n"+
		"                 [--snapshots URL] [--snapshot-interval D] [--snapshot-records N]\n"+
		"       braid run --deployment ID [--brokers host:port,...] [--instance-id ID] [--instances N] [--state-dir DIR]\n"+
		"                 [--session-timeout D] [--static-membership] [--client-config FILE]\n\n"+
		"Runs a design in this process as --instances instances of its application. Every process that\n"+
		"runs the same design with the same --app-id joins one consumer group, which spreads the tasks over\n"+
		"all their instances. Source topics must exist: run waits for missing ones, checking every second.\n"+
		"Missing sink topics are created with the broker's default partitions; they, the internal topics and the\n"+
		"telemetry topic get --replication-factor, by default min(3, the cluster's brokers), and at 3 or more\n"+
		"min.insync.replicas=2.\n"+
		"With --deployment, run takes the design and its settings from the deployment the designer wrote to\n"+
		"the config topic, waits for it, and moves to each new revision in turn with the deployment's other processes.", stdout)
	// The flags of exported programs too, from the runtime.
	flags := rprocess.DefineFlags(fs, "", "application id, the consumer group's id and internal topics' prefix (default: the design's, braid-<design id>)")
	dep := deploymentFlags(fs)
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if dep.id != "" {
		return runDeployment(ctx, fs, flags, dep, files, stdout)
	}
	if len(files) != 1 {
		return fmt.Errorf("run: want one design file, got %d (%q)", len(files), files)
	}
	pc, err := flags.Config()
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	r, err := newRunner(runOptions{path: files[0], runner: pc.Runner, telemetryTopic: pc.TelemetryTopic,
		control: controlSettings{topic: pc.ControlTopic, secret: pc.ControlSecret}, stdout: stdout, client: pc.Client})
	if err != nil {
		return err
	}
	return r.run(ctx)
}

// newRunner reads and compiles the design and makes the process of its
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
	rc.Config.Logger, rc.Out = r.log, opts.stdout
	rc.Config.Hooks = append(rc.Config.Hooks, r.hooks...)
	design := rprocess.Design{ID: d.ID, Name: d.Name, Revision: opts.revision}
	if opts.telemetryTopic != "" {
		if design.File, err = designer.Encode(d); err != nil {
			return nil, fmt.Errorf("run: encoding the design for telemetry: %w", err)
		}
	}
	if r.proc, err = rprocess.New(compiled.Topology, rprocess.Config{Runner: rc, TelemetryTopic: opts.telemetryTopic,
		ControlTopic: opts.control.topic, ControlSecret: opts.control.secret, Design: design, Client: opts.client}); err != nil {
		return nil, fmt.Errorf("run: %s: %w", opts.path, err)
	}
	r.sup, r.instances = r.proc.Runner().Supervisor(), r.proc.Runner().InstanceIDs()
	r.appID = r.proc.Runner().Config().Config.ApplicationID
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

// run runs the process (see process.Process.Run): the instances, their
// reports and the server's commands, until ctx ends or an instance
// fails.
func (r *runner) run(ctx context.Context) error {
	if err := r.proc.Run(ctx); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

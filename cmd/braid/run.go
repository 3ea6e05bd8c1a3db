package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/control"
	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/braidstream/braid/telemetry"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runOptions are what `braid run` runs: a design file and how.
type runOptions struct {
	// path is the design file.
	path    string
	brokers []string
	// appID is the application and group id; "" for the design's
	// (designer.ApplicationID).
	appID string
	// instanceID names the single instance, or prefixes the names of
	// several ("<instanceID>-<n>").
	instanceID string
	instances  int
	// stateDir holds the instances' state; "" for
	// ./braid-state/<application id>.
	stateDir  string
	guarantee streams.Guarantee
	standbys  int
	// sessionTimeout and commitInterval are the runtime's defaults at 0.
	sessionTimeout, commitInterval time.Duration
	// telemetryTopic is where the instances report, for braid serve to
	// show them; "" for nowhere.
	telemetryTopic string
	// static makes the instances static members of the group.
	static bool
	// control is where commands from a server come from, and the
	// secret that verifies them.
	control controlSettings
	// stdout gets the lines meant for the user: what runs, which source
	// topics are waited for, which sink topics were created.
	stdout io.Writer
}

// runner is one `braid run`: a compiled design and the Supervisor that
// runs its instances in this process, as members of the application's
// group with whatever other processes run it.
type runner struct {
	opts      runOptions
	appID     string
	instances []string
	topo      *streams.Topology
	sources   []string
	sinks     []string
	log       *slog.Logger
	// hooks are added to every instance's Config.Hooks. newRunner puts
	// its own in before it builds the Supervisor; one more (telemetry,
	// say) is one more append there.
	hooks []streams.Hook
	// failed gets the first fatal error of an instance (see failHook).
	failed chan error
	sup    *streams.Supervisor
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
		"                 [--session-timeout D] [--commit-interval D]\n\n"+
		"Runs a design in this process as --instances instances of its application. Every process that\n"+
		"runs the same design with the same --app-id joins one consumer group, which spreads the tasks over\n"+
		"all their instances. Source topics must exist: run waits for missing ones, checking every second.\n"+
		"Missing sink topics are created with the broker's default partitions and replication factor.", stdout)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka bootstrap addresses, comma-separated")
	appID := fs.String("app-id", "", "application id, the consumer group's id and internal topics' prefix (default: the design's, braid-<design id>)")
	instanceID := fs.String("instance-id", "", "id of this process's instance, or prefix of its instances' ids with --instances N > 1 (<id>-1 ... <id>-N); default: the host name")
	instances := fs.Int("instances", 1, "instances to run in this process")
	stateDir := fs.String("state-dir", "", "directory of the instances' state (default: ./braid-state/<app-id>)")
	guarantee := fs.String("guarantee", streams.AtLeastOnce.String(), "processing guarantee: "+streams.AtLeastOnce.String()+" or "+streams.ExactlyOnce.String())
	standbys := fs.Int("standbys", 0, "standby replicas of each stateful task, kept by other instances")
	sessionTimeout := fs.Duration("session-timeout", 0, "group session timeout (0: the runtime's default)")
	commitInterval := fs.Duration("commit-interval", 0, "how often offsets are committed (0: the runtime's default for the guarantee)")
	static := fs.Bool("static-membership", false, "join as a static member (group.instance.id = the instance id): a restart within the session timeout gets the same tasks back without a rebalance; give a stable --instance-id, such as a StatefulSet pod's name")
	ctl := controlFlags(fs)
	telemetryTopic := fs.String("telemetry-topic", telemetry.DefaultTopic, "topic the instances report their state and events on, four times a second, for braid serve to show; empty: report nowhere")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fmt.Errorf("run: want one design file, got %d (%q)", len(files), files)
	}
	if err := ctl.load(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	g, err := streams.ParseGuarantee(*guarantee)
	if err != nil {
		return fmt.Errorf("run: --guarantee %w", err)
	}
	if *instances < 1 {
		return fmt.Errorf("run: --instances %d: must be at least 1", *instances)
	}
	seeds := splitBrokers(*brokers)
	if len(seeds) == 0 {
		return errors.New("run: --brokers is empty")
	}
	id := *instanceID
	if id == "" {
		if id, err = os.Hostname(); err != nil || id == "" {
			return fmt.Errorf("run: no --instance-id given and the host name is unknown (%v): give --instance-id", err)
		}
	}
	r, err := newRunner(runOptions{
		path: files[0], brokers: seeds, appID: *appID, instanceID: id, instances: *instances, stateDir: *stateDir,
		guarantee: g, standbys: *standbys, sessionTimeout: *sessionTimeout, commitInterval: *commitInterval, telemetryTopic: *telemetryTopic, control: *ctl, static: *static, stdout: stdout,
	})
	if err != nil {
		return err
	}
	return r.run(ctx)
}

// newRunner reads and compiles the design and makes the Supervisor of
// its instances. Nothing talks to Kafka before run.
func newRunner(opts runOptions) (*runner, error) {
	d, compiled, err := loadDesign(opts.path)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	r := &runner{opts: opts, appID: opts.appID, topo: compiled.Topology, log: slog.Default(), failed: make(chan error, 1)}
	if r.appID == "" {
		r.appID = designer.ApplicationID(d)
	}
	r.sources, r.sinks = r.topo.SourceTopics(), r.topo.SinkTopics()
	if opts.stateDir == "" {
		opts.stateDir = filepath.Join("braid-state", r.appID)
		r.opts.stateDir = opts.stateDir // for the line run prints
	}
	r.hooks = append(r.hooks, stateLogHook{r.log}, failHook{r.failed})
	if opts.telemetryTopic != "" {
		design, err := designer.Encode(d)
		if err != nil {
			return nil, fmt.Errorf("run: encoding the design for telemetry: %w", err)
		}
		r.pub, err = telemetry.NewPublisher(telemetry.PublisherConfig{Brokers: opts.brokers, Topic: opts.telemetryTopic, Design: design,
			Process: opts.instanceID, Logger: r.log, Deployment: monitor.DeploymentInfo{
				ID: r.appID, Design: d.ID, DesignName: d.Name, ApplicationID: r.appID, Instances: opts.instances,
				Standbys: opts.standbys, Guarantee: opts.guarantee.String(), CommitInterval: r.commitInterval(), Topology: r.topo,
			}})
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		r.hooks = append(r.hooks, r.pub.Hook())
	}

	cfg := streams.Config{
		ApplicationID:       r.appID,
		Brokers:             opts.brokers,
		StateDir:            opts.stateDir,
		CommitInterval:      opts.commitInterval,
		SessionTimeout:      opts.sessionTimeout,
		ProcessingGuarantee: opts.guarantee,
		StandbyReplicas:     opts.standbys,
		StaticMembership:    opts.static,
		NodeMetrics:         true,
		Hooks:               r.hooks,
		Logger:              r.log,
	}
	if opts.guarantee == streams.ExactlyOnce {
		cfg.TransactionTimeout = deploy.TransactionTimeout(opts.commitInterval)
	}
	sc := streams.SupervisorConfig{Config: cfg, Instances: opts.instances}
	if opts.instances == 1 {
		// Named exactly --instance-id, so that a StatefulSet's pod name
		// is the instance's name.
		sc.InstanceIDs = []string{opts.instanceID}
		r.instances = sc.InstanceIDs
	} else {
		sc.InstancePrefix = opts.instanceID
		for i := range opts.instances {
			r.instances = append(r.instances, opts.instanceID+"-"+strconv.Itoa(i+1))
		}
	}
	if r.sup, err = streams.NewSupervisor(r.topo, sc); err != nil {
		return nil, fmt.Errorf("run: %s: %w", opts.path, err)
	}
	if r.pub != nil {
		r.pub.Attach(r.sup)
	}
	r.exit = os.Exit
	if r.commands, err = control.NewListener(control.ListenerConfig{Brokers: opts.brokers, Topic: opts.control.topic,
		Secret: opts.control.secret, App: r.appID, Instances: func() []string { return r.instances }, Handle: r.command,
		Logger: r.log}); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return r, nil
}

// commitInterval is the instances' commit interval, the runtime's
// default for the guarantee unless --commit-interval set one.
func (r *runner) commitInterval() time.Duration {
	return streams.Config{CommitInterval: r.opts.commitInterval, ProcessingGuarantee: r.opts.guarantee}.WithDefaults().CommitInterval
}

// loadDesign reads, decodes and compiles a design file, as braid compile
// does. Its errors name the file; a design with problems lists them.
func loadDesign(path string) (*designer.Design, *compiler.Compiled, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the design: %w", err)
	}
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

// run creates the missing sink topics, waits for the source topics and
// runs the instances until ctx ends, or until one fails: nothing in this
// process would start it again, so run ends with its error and leaves
// the restart to whoever started the process. The goroutines run starts
// it stops and waits for before it returns.
func (r *runner) run(ctx context.Context) error {
	// The topic checks are metadata requests, which the client answers
	// from a cache of MetadataMinAge (5 s by default): half a second,
	// below the checks' interval, makes each one ask the broker.
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.opts.brokers...), kgo.MetadataMinAge(500*time.Millisecond))
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	adm := kadm.NewClient(cl)
	err = r.createSinks(ctx, adm)
	if err == nil {
		err = r.waitForSources(ctx, adm)
	}
	cl.Close()
	if ctx.Err() != nil {
		return nil // stopped while waiting
	}
	if err != nil {
		return err
	}

	noun := "instances"
	if len(r.instances) == 1 {
		noun = "instance"
	}
	fmt.Fprintf(r.opts.stdout, "running %s: %s %s on %s (state dir %s); stop with Ctrl-C\n",
		r.appID, noun, strings.Join(r.instances, ", "), strings.Join(r.opts.brokers, ","), r.opts.stateDir)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var failure error
	wg.Go(func() {
		select {
		case failure = <-r.failed:
			cancel()
		case <-ctx.Done():
		}
	})
	// The reports outlive the instances, so that the last one, final,
	// shows them stopped.
	reportCtx, stopReports := context.WithCancel(context.Background())
	if r.pub != nil {
		wg.Go(func() { _ = r.pub.Run(reportCtx) })
	}
	wg.Go(func() { _ = r.commands.Run(ctx) })
	err = r.sup.Run(ctx)
	cancel()
	stopReports()
	wg.Wait()
	if failure != nil {
		return fmt.Errorf("run: an instance failed, stopping the others: %w", failure)
	}
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// createSinks creates the sink topics that are missing (and are not
// source topics, which are waited for), with the broker's default
// partitions and replication factor, as a deployment does with its
// own. Internal topics are the runtime's to create.
func (r *runner) createSinks(ctx context.Context, adm *kadm.Client) error {
	var sinks []string
	for _, t := range r.sinks {
		if !slices.Contains(r.sources, t) {
			sinks = append(sinks, t)
		}
	}
	if len(sinks) == 0 {
		return nil
	}
	var missing []string
	if err := r.retry(ctx, "reading the metadata of the sink topics", func(ctx context.Context) (err error) {
		missing, err = missingTopics(ctx, adm, sinks)
		return err
	}); err != nil || len(missing) == 0 {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(cctx, -1, -1, nil, missing...)
	if err != nil {
		return fmt.Errorf("run: creating sink topics %q: %w", missing, err)
	}
	var errs []error
	for _, t := range resp.Sorted() {
		switch {
		case errors.Is(t.Err, kerr.TopicAlreadyExists):
		case t.Err != nil:
			errs = append(errs, fmt.Errorf("run: creating sink topic %q: %w", t.Topic, t.Err))
		default:
			fmt.Fprintf(r.opts.stdout, "created sink topic %q with %s, replication factor %d\n", t.Topic, countNoun(int(t.NumPartitions), "partition"), t.ReplicationFactor)
		}
	}
	return errors.Join(errs...)
}

// waitForSources returns once every source topic exists, checking every
// second, or when ctx ends. Kafka Streams does not create source topics
// either: a missing one is most likely another's to create, or a typo.
// Each missing topic is named once.
func (r *runner) waitForSources(ctx context.Context, adm *kadm.Client) error {
	named := map[string]bool{}
	return r.retry(ctx, "reading the metadata of the source topics", func(ctx context.Context) error {
		missing, err := missingTopics(ctx, adm, r.sources)
		if err != nil {
			return err
		}
		for _, t := range missing {
			if !named[t] {
				named[t] = true
				fmt.Fprintf(r.opts.stdout, "waiting for source topic %q to be created\n", t)
			}
		}
		if len(missing) > 0 {
			return errMissing
		}
		return nil
	})
}

// errMissing is waitForSources' "not yet", which retry does not log.
var errMissing = errors.New("source topics are missing")

// retry calls try every second until it returns nil or ctx ends. A
// failure other than errMissing (the broker unreachable, say) is logged
// when it differs from the one before.
func (r *runner) retry(ctx context.Context, what string, try func(context.Context) error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := ""
	for {
		tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := try(tctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		if msg := err.Error(); !errors.Is(err, errMissing) && msg != last {
			r.log.Warn(what+" failed; trying again every second", "brokers", strings.Join(r.opts.brokers, ","), "err", err)
			last = msg
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// missingTopics returns those of topics the cluster does not have.
func missingTopics(ctx context.Context, adm *kadm.Client, topics []string) ([]string, error) {
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, t := range topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) || d.Err == nil && len(d.Partitions) == 0:
			missing = append(missing, t)
		case d.Err != nil:
			return nil, fmt.Errorf("topic %q: %w", t, d.Err)
		}
	}
	return missing, nil
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

// stateLogHook logs every state change of every instance.
type stateLogHook struct{ log *slog.Logger }

func (h stateLogHook) OnStateChange(c streams.StateChange) {
	h.log.Info("instance state changed", "app", c.ApplicationID, "instance", c.InstanceID, "from", c.From, "to", c.To)
}

// failHook hands the first fatal error of any instance to runner.run,
// without blocking the instance.
type failHook struct{ failed chan<- error }

func (h failHook) OnError(e streams.ErrorEvent) {
	if !e.Fatal {
		return
	}
	select {
	case h.failed <- fmt.Errorf("instance %s: %w", e.InstanceID, e.Err):
	default:
	}
}

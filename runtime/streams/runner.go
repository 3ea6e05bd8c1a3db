package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/storeserver"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// RunnerConfig configures a Runner: the instances of one application that
// one operating-system process runs, as `braid run` and the programs
// `braid export` writes run a design. Processes that run one topology with
// one ApplicationID join one group, whichever of the two they are.
type RunnerConfig struct {
	// Config is what every instance starts from, as
	// SupervisorConfig.Config; its InstanceID must be empty, since
	// InstanceID below names the instances. Its Brokers and
	// ClientOptions are also where the Runner checks and creates topics,
	// and its Logger is where it logs every instance's state changes.
	// Defaults (see WithDefaults): StateDir braid-state/<ApplicationID>
	// and, under ExactlyOnce, TransactionTimeout
	// ExactlyOnceTransactionTimeout(CommitInterval).
	Config Config
	// InstanceID is the id of the only instance, or, with Instances > 1,
	// the prefix of the instances' ids: <InstanceID>-1 ...
	// <InstanceID>-<Instances> (see RunnerInstanceIDs). Default: the host
	// name, so that a StatefulSet's pod names its instance.
	InstanceID string
	// Instances is how many instances the process runs. Default 1.
	Instances int
	// QueryToken is the bearer token of the store server the Runner
	// runs when Config.ApplicationServer is set: it listens there and
	// answers store lookups for the whole group (see
	// runtime/storeserver), and needs a token unless that address is a
	// loopback one.
	QueryToken string
	// QueryListen is the host:port that store server listens on when it
	// differs from the address the group is told (a container's
	// 0.0.0.0:7070 behind its pod's name). Default:
	// Config.ApplicationServer.
	QueryListen string
	// Out receives the lines meant for the process's user: each missing
	// source topic, once, each sink topic created, and what runs.
	// Default: io.Discard.
	Out io.Writer
}

// WithDefaults returns a copy of c with every unset field the Runner
// defaults at its default. An unknown host name leaves InstanceID empty,
// which Validate reports. Config's own defaults are the Supervisor's to
// fill in.
func (c RunnerConfig) WithDefaults() RunnerConfig {
	if c.InstanceID == "" {
		c.InstanceID, _ = os.Hostname()
	}
	if c.Instances == 0 {
		c.Instances = 1
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Config.StateDir == "" && c.Config.ApplicationID != "" {
		c.Config.StateDir = filepath.Join("braid-state", c.Config.ApplicationID)
	}
	if c.Config.ProcessingGuarantee == ExactlyOnce && c.Config.TransactionTimeout == 0 {
		c.Config.TransactionTimeout = ExactlyOnceTransactionTimeout(c.Config.CommitInterval)
	}
	return c
}

// Validate reports every problem of c at once, joined with errors.Join,
// as Config.Validate does, with the Supervisor's own: the instances' ids
// must name directories, and Config must be valid for each instance.
func (c RunnerConfig) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Instances < 0 {
		bad("Instances", "%d is negative", c.Instances)
	}
	if c.InstanceID == "" {
		bad("InstanceID", "empty, and the host name is unknown: give one")
	}
	if c.Config.InstanceID != "" {
		bad("Config.InstanceID", "%q is set: InstanceID names a Runner's instances", c.Config.InstanceID)
	}
	if c.QueryListen != "" && c.Config.ApplicationServer == "" {
		bad("QueryListen", "%q is set without Config.ApplicationServer (--advertise): nothing would tell the group where to send lookups", c.QueryListen)
	}
	if c.Config.ApplicationServer != "" {
		if err := c.storeServerConfig().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("config QueryToken (braid run's --query-token): serving the stores advertised as %q (--advertise): %w", c.Config.ApplicationServer, err))
		}
	}
	if c.InstanceID != "" && c.Instances >= 0 {
		if err := c.supervisorConfig().validate(); err != nil {
			errs = append(errs, err)
		}
	} else if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// storeServerConfig is the config of the store server c runs.
func (c RunnerConfig) storeServerConfig() storeserver.Config {
	return storeserver.Config{Addr: cmp.Or(c.QueryListen, c.Config.ApplicationServer), Advertised: c.Config.ApplicationServer,
		Token: c.QueryToken, Logger: c.Config.Logger}
}

// supervisorConfig is the Supervisor's config of c.
func (c RunnerConfig) supervisorConfig() SupervisorConfig {
	return SupervisorConfig{Config: c.Config, InstanceIDs: RunnerInstanceIDs(c.InstanceID, c.Instances)}
}

// RunnerInstanceIDs returns the ids of a Runner's instances: id alone for
// one instance (or fewer), so that a process running one is named
// exactly, and id-1 ... id-n for n.
func RunnerInstanceIDs(id string, n int) []string {
	if n <= 1 {
		return []string{id}
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = id + "-" + strconv.Itoa(i+1)
	}
	return ids
}

// ExactlyOnceTransactionTimeout is the TransactionTimeout to run a
// commit interval with under ExactlyOnce: 0 (the default, 10 s: how long
// a crashed instance's transaction holds read-committed readers up) for
// intervals under 5 s, and twice the interval for longer ones, since a
// transaction stays open for a commit interval and must time out after
// it. Runners and braid's deployments take it from here.
func ExactlyOnceTransactionTimeout(commitInterval time.Duration) time.Duration {
	if commitInterval >= 5*time.Second {
		return 2 * commitInterval
	}
	return 0
}

// SplitBrokers splits a comma-separated list of bootstrap addresses, as
// a --brokers flag gives them, trimming spaces and dropping empty ones.
func SplitBrokers(s string) []string {
	var out []string
	for b := range strings.SplitSeq(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// Runner runs the instances of one application in this process, with a
// Supervisor, as a process of a deployment does: it creates the sink
// topics that are missing, waits for the source topics, and runs the
// instances until its context ends or one of them fails. Nothing in the
// process would start a failed instance again, so the Runner stops the
// others and returns the error, leaving the restart to whoever started
// the process.
type Runner struct {
	cfg     RunnerConfig
	ids     []string
	sources []string
	sinks   []string
	sup     *Supervisor
	failed  chan error
	// server answers store lookups when the instances advertise an
	// address; nil otherwise.
	server *storeserver.Server

	mu       sync.Mutex
	prepared bool
}

// NewRunner checks cfg (see RunnerConfig.Validate, after WithDefaults)
// and makes the Supervisor of topo's instances. Nothing talks to Kafka
// before Prepare or Run.
func NewRunner(topo *Topology, cfg RunnerConfig) (*Runner, error) {
	if topo == nil {
		return nil, errors.New("creating runner: topology is nil")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("creating runner: %w", err)
	}
	r := &Runner{cfg: cfg, sources: topo.SourceTopics(), failed: make(chan error, 1)}
	for _, t := range topo.SinkTopics() {
		// A topic both read and written is a source, waited for.
		if !slices.Contains(r.sources, t) {
			r.sinks = append(r.sinks, t)
		}
	}
	if cfg.Config.Logger == nil {
		cfg.Config.Logger = slog.Default()
	}
	sc := cfg.supervisorConfig()
	sc.Config.Hooks = append(slices.Clone(sc.Config.Hooks), runnerHook{log: cfg.Config.Logger, failed: r.failed})
	r.cfg, r.ids = cfg, sc.InstanceIDs
	var err error
	if r.sup, err = NewSupervisor(topo, sc); err != nil {
		return nil, fmt.Errorf("creating runner: %w", err)
	}
	if cfg.Config.ApplicationServer != "" {
		if r.server, err = storeserver.New(r.sup.QueryStores(), cfg.storeServerConfig()); err != nil {
			return nil, fmt.Errorf("creating runner: %w", err)
		}
	}
	return r, nil
}

// Supervisor returns the Supervisor of the Runner's instances, for
// crashing, stopping or starting one, or attaching something that
// reports them.
func (r *Runner) Supervisor() *Supervisor { return r.sup }

// InstanceIDs returns the ids of the Runner's instances.
func (r *Runner) InstanceIDs() []string { return slices.Clone(r.ids) }

// Config returns the Runner's config, with its defaults.
func (r *Runner) Config() RunnerConfig { return r.cfg }

// Prepare creates the missing sink topics, with the broker's default
// partitions and Config.ReplicationFactor, by default min(3, brokers)
// (TopicReplication; internal topics are the runtime's to create), and returns once every source topic exists, checking every
// second, or when ctx ends, with nil. Kafka Streams does not create
// source topics either: a missing one is most likely another's to
// create, or a typo. A failure to reach the brokers is logged, when it
// differs from the one before, and tried again. Run calls Prepare unless
// it succeeded before; calling it first is for doing something between
// the topics being there and the instances starting.
func (r *Runner) Prepare(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prepared {
		return nil
	}
	// The topic checks are metadata requests, which the client answers
	// from a cache of MetadataMinAge (5 s by default): half a second,
	// below the checks' interval, makes each one ask the broker.
	opts := append(slices.Clone(r.cfg.Config.ClientOptions), kgo.SeedBrokers(r.cfg.Config.Brokers...), kgo.MetadataMinAge(500*time.Millisecond))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("preparing topics: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := r.createSinks(ctx, adm); err != nil || ctx.Err() != nil {
		return err
	}
	if err := r.waitForSources(ctx, adm); err != nil || ctx.Err() != nil {
		return err
	}
	r.prepared = true
	return nil
}

// createSinks creates the sink topics that are missing.
func (r *Runner) createSinks(ctx context.Context, adm *kadm.Client) error {
	if len(r.sinks) == 0 {
		return nil
	}
	var missing []string
	if err := r.retry(ctx, "reading the metadata of the sink topics", func(ctx context.Context) (err error) {
		missing, err = missingTopics(ctx, adm, r.sinks)
		return err
	}); err != nil || len(missing) == 0 {
		return nil // ctx ended
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	repl, err := ReplicationFor(cctx, adm, r.cfg.Config.ReplicationFactor)
	if err != nil {
		return fmt.Errorf("creating sink topics %q: %w", missing, err)
	}
	resp, err := repl.CreateTopics(cctx, adm, -1, nil, missing...)
	if err != nil {
		return fmt.Errorf("creating sink topics %q: %w", missing, err)
	}
	var errs []error
	for _, t := range resp.Sorted() {
		var rfe *ReplicationFactorError
		switch {
		case errors.As(t.Err, &rfe):
			errs = append(errs, rfe)
		case errors.Is(t.Err, kerr.TopicAlreadyExists):
		case t.Err != nil:
			errs = append(errs, fmt.Errorf("creating sink topic %q: %w", t.Topic, t.Err))
		default:
			noun := "partitions"
			if t.NumPartitions == 1 {
				noun = "partition"
			}
			fmt.Fprintf(r.cfg.Out, "created sink topic %q with %d %s, replication factor %d\n", t.Topic, t.NumPartitions, noun, t.ReplicationFactor)
		}
	}
	return errors.Join(errs...)
}

// waitForSources returns once every source topic exists, or when ctx
// ends, naming each missing topic once.
func (r *Runner) waitForSources(ctx context.Context, adm *kadm.Client) error {
	named := map[string]bool{}
	_ = r.retry(ctx, "reading the metadata of the source topics", func(ctx context.Context) error {
		missing, err := missingTopics(ctx, adm, r.sources)
		if err != nil {
			return err
		}
		for _, t := range missing {
			if !named[t] {
				named[t] = true
				fmt.Fprintf(r.cfg.Out, "waiting for source topic %q to be created\n", t)
			}
		}
		if len(missing) > 0 {
			return errTopicsMissing
		}
		return nil
	})
	return nil
}

// errTopicsMissing is waitForSources' "not yet", which retry does not
// log.
var errTopicsMissing = errors.New("source topics are missing")

// retry calls try every second until it returns nil or ctx ends, and
// returns ctx's error. A failure other than errTopicsMissing (the
// brokers unreachable, say) is logged when it differs from the one
// before.
func (r *Runner) retry(ctx context.Context, what string, try func(context.Context) error) error {
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
		if msg := err.Error(); !errors.Is(err, errTopicsMissing) && msg != last {
			r.cfg.Config.Logger.Warn(what+" failed; trying again every second", "brokers", strings.Join(r.cfg.Config.Brokers, ","), "err", err)
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

// Run prepares the topics (see Prepare), says on Out what runs, and runs
// the instances until ctx ends, then stops them gracefully (committing,
// leaving the group) and returns nil; or until one of them fails, then
// stops the others and returns its error. With Config.ApplicationServer
// set it also serves the stores there (see RunnerConfig.QueryToken) for
// as long as the instances run; an address it cannot listen on fails the
// run before any instance starts. A Runner runs once.
func (r *Runner) Run(ctx context.Context) error {
	if err := r.Prepare(ctx); err != nil {
		return fmt.Errorf("running %s: %w", r.cfg.Config.ApplicationID, err)
	}
	if ctx.Err() != nil {
		return nil // stopped while waiting
	}
	noun := "instances"
	if len(r.ids) == 1 {
		noun = "instance"
	}
	fmt.Fprintf(r.cfg.Out, "running %s: %s %s on %s (state dir %s); stop with Ctrl-C\n",
		r.cfg.Config.ApplicationID, noun, strings.Join(r.ids, ", "), strings.Join(r.cfg.Config.Brokers, ","), r.cfg.Config.StateDir)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var serverErr error
	if r.server != nil {
		ln, err := net.Listen("tcp", r.cfg.storeServerConfig().Addr)
		if err != nil {
			return fmt.Errorf("running %s: serving the stores: %w", r.cfg.Config.ApplicationID, err)
		}
		fmt.Fprintf(r.cfg.Out, "serving store lookups on http://%s (advertised as %s)\n", ln.Addr(), r.cfg.Config.ApplicationServer)
		wg.Go(func() {
			if serverErr = r.server.Serve(ctx, ln); serverErr != nil {
				cancel()
			}
		})
	}
	var failure error
	wg.Go(func() {
		select {
		case failure = <-r.failed:
			cancel()
		case <-ctx.Done():
		}
	})
	err := r.sup.Run(ctx)
	cancel()
	wg.Wait()
	if failure != nil {
		return fmt.Errorf("running %s: an instance failed, stopping the others: %w", r.cfg.Config.ApplicationID, failure)
	}
	if serverErr != nil {
		return fmt.Errorf("running %s: %w", r.cfg.Config.ApplicationID, serverErr)
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", r.cfg.Config.ApplicationID, err)
	}
	return nil
}

// runnerHook logs every state change of every instance, and hands the
// first fatal error of any instance to Run, without blocking the
// instance.
type runnerHook struct {
	log    *slog.Logger
	failed chan<- error
}

func (h runnerHook) OnStateChange(c StateChange) {
	h.log.Info("instance state changed", "app", c.ApplicationID, "instance", c.InstanceID, "from", c.From, "to", c.To)
}

func (h runnerHook) OnError(e ErrorEvent) {
	if !e.Fatal {
		return
	}
	select {
	case h.failed <- fmt.Errorf("instance %s: %w", e.InstanceID, e.Err):
	default:
	}
}

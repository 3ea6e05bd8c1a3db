package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/streams"
)

// Workloads of the peer benchmark, in the order it runs them. Each is one
// of Braid's benchmark topologies, written again with Kafka Streams' DSL in
// peer/kstreams; PeerCountEOS is the count under exactly-once.
const (
	PeerPipe     = "pipe"
	PeerCount    = "count"
	PeerWindow   = "window"
	PeerJoin     = "join"
	PeerCountEOS = "count-eos"
)

// PeerWorkloads lists the workloads in the order RunPeer runs them.
var PeerWorkloads = []string{PeerPipe, PeerCount, PeerWindow, PeerJoin, PeerCountEOS, PeerRestore, PeerFailover}

// peerEvent is one JSON line a peer worker, Braid's or Kafka Streams',
// prints on its stdout: "warm" (the warm-up pass done), "started",
// "running" (Kafka Streams only), "first" (the first input record
// fetched), "done" (the input processed and the application closed), "closed" or "error";
// restoring (--restore-stores), "restoring" and "restored"; with
// --report-tasks, "tasks" whenever the tasks of its instances changed, and
// "crashed" when SIGUSR1 crashed one (peerFailoverWorker); with the wall
// clock in milliseconds.
type peerEvent struct {
	Event   string `json:"event"`
	AtMs    int64  `json:"at_ms"`
	Message string `json:"message,omitempty"`
	// Processed is the records the application processed, on "warm" and
	// "closed".
	Processed *int64 `json:"processed,omitempty"`
	// Tasks are, on "tasks", the partitions of the count's tasks active
	// and standby on each instance of the worker, by instance name.
	Tasks map[string]peerTasks `json:"tasks,omitempty"`
}

// peerWorkerArgs are the command line of a peer worker; Braid's
// (RunPeerWorker) and Kafka Streams' (peer/kstreams's Bench) take the same.
type peerWorkerArgs struct {
	workload, bootstrap, appID, stateDir, input, output, guarantee   string
	commitIntervalMs, cacheMaxBytes, warmUpRecords, stopAfterRecords int64
	threads                                                          int
	// restoreStores, when positive, makes the worker restore instead of
	// process (peerRestore): it waits for the end of restoreStores
	// stores' restores; restoreWarmUp restores once unmeasured first.
	restoreStores int
	restoreWarmUp bool
	// The failover's (peerFailoverWorker): the group session timeout
	// (0: the side's default), standby replicas, instances in the
	// worker (2: both under a Supervisor, which SIGUSR1 tells to crash
	// one) and whether to print "tasks" events.
	sessionTimeoutMs    int64
	standbys, instances int
	reportTasks         bool
}

func (a peerWorkerArgs) list() []string {
	l := []string{"--workload", a.workload, "--bootstrap", a.bootstrap, "--application-id", a.appID,
		"--state-dir", a.stateDir, "--input", a.input, "--output", a.output, "--guarantee", a.guarantee,
		"--commit-interval-ms", fmt.Sprint(a.commitIntervalMs), "--cache-max-bytes", fmt.Sprint(a.cacheMaxBytes),
		"--threads", fmt.Sprint(a.threads), "--warm-up-records", fmt.Sprint(a.warmUpRecords),
		"--stop-after-records", fmt.Sprint(a.stopAfterRecords), "--restore-stores", fmt.Sprint(a.restoreStores),
		"--restore-warm-up", fmt.Sprint(a.restoreWarmUp)}
	if a.reportTasks {
		// The failover's only, so that the other workloads' command
		// lines stay as they were.
		l = append(l, "--session-timeout-ms", fmt.Sprint(a.sessionTimeoutMs), "--standbys", fmt.Sprint(a.standbys),
			"--instances", fmt.Sprint(max(a.instances, 1)), "--report-tasks", "true")
	}
	return l
}

// RunPeerWorker is the Braid side of one peer benchmark run, in a process
// of its own (`braid bench peer-worker`, which RunPeer starts): it parses
// the worker command line, makes the warm-up pass --warm-up-records asks
// for (peerWarmUp), runs the workload's topology (the topologies of
// BraidPipe on the bytes serde, BraidCount, BraidWindowedCount and
// BraidJoin) as one instance until ctx ends (closing it, which commits,
// once it processed --stop-after-records, if given), and prints the events of
// peerEvent to stdout. The workload "count" runs under --guarantee, as
// Kafka Streams' does (at_least_once or exactly_once_v2).
func RunPeerWorker(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench peer-worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var a peerWorkerArgs
	fs.StringVar(&a.workload, "workload", "", "pipe, count, window or join")
	fs.StringVar(&a.bootstrap, "bootstrap", "", "bootstrap servers")
	fs.StringVar(&a.appID, "application-id", "", "application id")
	fs.StringVar(&a.stateDir, "state-dir", "", "state directory")
	fs.StringVar(&a.input, "input", "", "input topic (left,right for the join)")
	fs.StringVar(&a.output, "output", "", "output topic")
	fs.StringVar(&a.guarantee, "guarantee", "at_least_once", "at_least_once or exactly_once_v2")
	fs.Int64Var(&a.commitIntervalMs, "commit-interval-ms", 1000, "commit interval")
	fs.Int64Var(&a.cacheMaxBytes, "cache-max-bytes", 10<<20, "record cache bytes")
	fs.IntVar(&a.threads, "threads", 1, "threads (Braid runs one)")
	fs.Int64Var(&a.warmUpRecords, "warm-up-records", 0, "records of an unmeasured warm-up pass first, in this process")
	fs.Int64Var(&a.stopAfterRecords, "stop-after-records", 0, "close the App (committing) once it processed this many records, then wait for the end (0: run until the end)")
	fs.IntVar(&a.restoreStores, "restore-stores", 0, "restore into a fresh state dir until this many stores restored, then exit (0: process)")
	fs.Func("restore-warm-up", "true or false: with --restore-stores, restore once unmeasured first", boolValue(&a.restoreWarmUp))
	fs.Int64Var(&a.sessionTimeoutMs, "session-timeout-ms", 0, "group session timeout (0: the App's default)")
	fs.IntVar(&a.standbys, "standbys", 0, "standby replicas")
	fs.IntVar(&a.instances, "instances", 1, "instances: 2 runs both under a Supervisor, which SIGUSR1 tells to crash instance-1")
	fs.Func("report-tasks", "true or false: print the instances' tasks whenever they change (the failover)", boolValue(&a.reportTasks))
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	if a.bootstrap == "" || a.appID == "" || a.stateDir == "" || a.input == "" || a.output == "" {
		return errors.New("bench peer-worker: --bootstrap, --application-id, --state-dir, --input and --output are required")
	}
	if a.instances < 1 || a.instances > 2 {
		return fmt.Errorf("bench peer-worker: --instances %d: want 1 or 2", a.instances)
	}
	if a.threads != 1 {
		return fmt.Errorf("bench peer-worker: --threads %d: a Braid instance runs one", a.threads)
	}
	var g streams.Guarantee
	switch a.guarantee {
	case "at_least_once":
		g = streams.AtLeastOnce
	case "exactly_once_v2":
		g = streams.ExactlyOnce
	default:
		return fmt.Errorf("bench peer-worker: --guarantee %q: want at_least_once or exactly_once_v2", a.guarantee)
	}
	if a.cacheMaxBytes == 0 {
		a.cacheMaxBytes = -1 // off, as statestore.cache.max.bytes=0 is
	}
	ev := &peerEvents{w: stdout, inputs: strings.Split(a.input, ",")}
	if a.restoreStores > 0 {
		return peerRestore(ctx, a, g, ev)
	}
	if a.reportTasks {
		return peerFailoverWorker(ctx, a, g, ev)
	}
	if a.warmUpRecords > 0 {
		n, err := peerWarmUp(ctx, a, g)
		if err != nil {
			ev.print("error", err.Error(), -1)
			return fmt.Errorf("bench peer-worker: warming up: %w", err)
		}
		ev.print("warm", "", n)
	}
	app, err := newPeerApp(a, g, a.appID, a.stateDir, a.output, nil, kgo.WithHooks(ev))
	if err != nil {
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- app.Run(ctx) }()
	ev.print("started", "", -1)
	if a.stopAfterRecords > 0 {
		// Done: closing commits at once, rather than at the next commit
		// interval; Kafka Streams' worker does the same.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for processed(app) < a.stopAfterRecords {
			select {
			case err := <-runErr:
				return peerRunFailed(app, ev, err)
			case <-ctx.Done():
				return closePeerApp(app, ev, runErr)
			case <-tick.C:
			}
		}
		n := processed(app)
		if err := app.Close(); err != nil {
			return fmt.Errorf("bench peer-worker: %w", err)
		}
		if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("bench peer-worker: %w", err)
		}
		ev.print("done", "", n)
		<-ctx.Done()
		ev.print("closed", "", n)
		return nil
	}
	select {
	case err := <-runErr:
		return peerRunFailed(app, ev, err)
	case <-ctx.Done():
	}
	return closePeerApp(app, ev, runErr)
}

// boolValue sets *b from a flag's value, true or false: the worker's
// flags are --name value pairs, as Kafka Streams' worker parses them (a
// flag.BoolVar would take "--name false" as true and stop at "false").
func boolValue(b *bool) func(string) error {
	return func(v string) error {
		var err error
		*b, err = strconv.ParseBool(v)
		return err
	}
}

// peerRunFailed reports the App's Run ending early with err.
func peerRunFailed(app *streams.App, ev *peerEvents, err error) error {
	app.Close()
	ev.print("error", fmt.Sprint(err), -1)
	return fmt.Errorf("bench peer-worker: %w", err)
}

// closePeerApp closes app, waits for its Run to return and prints "closed".
func closePeerApp(app *streams.App, ev *peerEvents, runErr chan error) error {
	n := processed(app)
	closeErr := app.Close()
	err := <-runErr
	ev.print("closed", "", n)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	return closeErr
}

// newPeerApp returns the App of a's workload as application appID, on
// stateDir, writing to output, with hooks.
func newPeerApp(a peerWorkerArgs, g streams.Guarantee, appID, stateDir, output string, hooks []streams.Hook, opts ...kgo.Opt) (*streams.App, error) {
	topo, err := peerTopology(a.workload, strings.Split(a.input, ","), output)
	if err != nil {
		return nil, err
	}
	return streams.New(topo, peerConfig(a, g, appID, stateDir, hooks, opts...))
}

// peerConfig is the App configuration of a's workload as application
// appID on stateDir, with hooks.
func peerConfig(a peerWorkerArgs, g streams.Guarantee, appID, stateDir string, hooks []streams.Hook, opts ...kgo.Opt) streams.Config {
	return streams.Config{
		ApplicationID:       appID,
		Brokers:             streams.SplitBrokers(a.bootstrap),
		StateDir:            stateDir,
		CommitInterval:      time.Duration(a.commitIntervalMs) * time.Millisecond,
		CacheMaxBytes:       a.cacheMaxBytes,
		ProcessingGuarantee: g,
		ClientOptions:       append(ClientOptions(), opts...),
		Hooks:               hooks,
		Logger:              slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		SessionTimeout:      time.Duration(a.sessionTimeoutMs) * time.Millisecond,
		StandbyReplicas:     a.standbys,
	}
}

// peerWarmUp runs a's workload as application ID-warm-up (state dir
// DIR/warm-up, output topic OUT-warm-up) over the same input until it
// processed a.warmUpRecords records, in this process, as Kafka Streams'
// worker warms its JVM; it returns the records processed.
func peerWarmUp(ctx context.Context, a peerWorkerArgs, g streams.Guarantee) (int64, error) {
	app, err := newPeerApp(a, g, a.appID+"-warm-up", filepath.Join(a.stateDir, "warm-up"), a.output+"-warm-up", nil)
	if err != nil {
		return 0, err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- app.Run(ctx) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for processed(app) < a.warmUpRecords {
		select {
		case err := <-runErr:
			app.Close()
			return 0, fmt.Errorf("the warm-up pass stopped: %w", err)
		case <-ctx.Done():
			app.Close()
			<-runErr
			return 0, ctx.Err()
		case <-tick.C:
		}
	}
	n := processed(app)
	if err := app.Close(); err != nil {
		return n, err
	}
	if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
		return n, err
	}
	return n, nil
}

// peerTopology builds workload's Braid topology from inputs to output.
func peerTopology(workload string, inputs []string, output string) (*streams.Topology, error) {
	switch workload {
	case PeerPipe:
		return pipeTopology(streams.Bytes, streams.Bytes, inputs[0], output)
	case PeerCount:
		return countTopology(inputs[0], output)
	case PeerWindow:
		return windowedCountTopology(inputs[0], output)
	case PeerJoin:
		if len(inputs) != 2 {
			return nil, fmt.Errorf("--input %s: the join takes two topics, left,right", strings.Join(inputs, ","))
		}
		return joinTopology(inputs[0], inputs[1], output)
	}
	return nil, fmt.Errorf("--workload %q: unknown (known: pipe, count, window, join)", workload)
}

// peerEvents prints a worker's events; as a franz-go hook it prints
// "first" when the App's clients first read a batch of an input topic,
// the first input record fetched, as Kafka Streams' worker reads from its
// consumers' records-consumed-total.
type peerEvents struct {
	mu     sync.Mutex
	w      io.Writer
	inputs []string
	first  bool
}

func (p *peerEvents) OnFetchBatchRead(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.FetchBatchMetrics) {
	if m.NumRecords == 0 || !slices.Contains(p.inputs, topic) {
		return
	}
	p.mu.Lock()
	done := p.first
	p.first = true
	p.mu.Unlock()
	if !done {
		p.print("first", "", -1)
	}
}

// print prints event, with processed unless it is negative.
func (p *peerEvents) print(event, message string, processed int64) {
	e := peerEvent{Event: event, AtMs: time.Now().UnixMilli(), Message: message}
	if processed >= 0 {
		e.Processed = &processed
	}
	p.printEvent(e)
}

// printEvent prints e as a JSON line.
func (p *peerEvents) printEvent(e peerEvent) {
	b, _ := json.Marshal(e)
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s\n", b)
}

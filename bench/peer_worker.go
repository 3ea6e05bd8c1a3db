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
	"strings"
	"sync"
	"time"

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
var PeerWorkloads = []string{PeerPipe, PeerCount, PeerWindow, PeerJoin, PeerCountEOS}

// peerEvent is one JSON line a peer worker, Braid's or Kafka Streams',
// prints on its stdout: "started", "running" (Kafka Streams only), "first"
// (the first record processed), "closed" or "error", with the wall clock
// in milliseconds.
type peerEvent struct {
	Event   string `json:"event"`
	AtMs    int64  `json:"at_ms"`
	Message string `json:"message,omitempty"`
}

// peerWorkerArgs are the command line of a peer worker; Braid's
// (RunPeerWorker) and Kafka Streams' (peer/kstreams's Bench) take the same.
type peerWorkerArgs struct {
	workload, bootstrap, appID, stateDir, input, output, guarantee string
	commitIntervalMs, cacheMaxBytes                                int64
	threads                                                        int
}

func (a peerWorkerArgs) list() []string {
	return []string{"--workload", a.workload, "--bootstrap", a.bootstrap, "--application-id", a.appID,
		"--state-dir", a.stateDir, "--input", a.input, "--output", a.output, "--guarantee", a.guarantee,
		"--commit-interval-ms", fmt.Sprint(a.commitIntervalMs), "--cache-max-bytes", fmt.Sprint(a.cacheMaxBytes),
		"--threads", fmt.Sprint(a.threads)}
}

// RunPeerWorker is the Braid side of one peer benchmark run, in a process
// of its own (`braid bench peer-worker`, which RunPeer starts): it parses
// the worker command line, runs the workload's topology (the topologies of
// BraidPipe on the bytes serde, BraidCount, BraidWindowedCount and
// BraidJoin) as one instance until ctx ends, and prints the events of
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
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	if a.bootstrap == "" || a.appID == "" || a.stateDir == "" || a.input == "" || a.output == "" {
		return errors.New("bench peer-worker: --bootstrap, --application-id, --state-dir, --input and --output are required")
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
	topo, err := peerTopology(a.workload, strings.Split(a.input, ","), a.output)
	if err != nil {
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	ev := &peerEvents{w: stdout}
	app, err := streams.New(topo, streams.Config{
		ApplicationID:       a.appID,
		Brokers:             streams.SplitBrokers(a.bootstrap),
		StateDir:            a.stateDir,
		CommitInterval:      time.Duration(a.commitIntervalMs) * time.Millisecond,
		CacheMaxBytes:       a.cacheMaxBytes,
		ProcessingGuarantee: g,
		ClientOptions:       ClientOptions(),
		Hooks:               []streams.Hook{ev},
		Logger:              slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- app.Run(ctx) }()
	ev.print("started", "")
	select {
	case err := <-runErr:
		app.Close()
		ev.print("error", fmt.Sprint(err))
		return fmt.Errorf("bench peer-worker: %w", err)
	case <-ctx.Done():
	}
	closeErr := app.Close()
	err = <-runErr
	ev.print("closed", "")
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	return closeErr
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

// peerEvents prints a worker's events; as a hook it prints "first" when a
// task's stream time first moves, the first record processed.
type peerEvents struct {
	mu    sync.Mutex
	w     io.Writer
	first bool
}

func (p *peerEvents) OnStreamTime(streams.StreamTimeEvent) {
	p.mu.Lock()
	done := p.first
	p.first = true
	p.mu.Unlock()
	if !done {
		p.print("first", "")
	}
}

func (p *peerEvents) print(event, message string) {
	b, _ := json.Marshal(peerEvent{Event: event, AtMs: time.Now().UnixMilli(), Message: message})
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s\n", b)
}

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
)

// Topics of the peer benchmark: the input of pipe and both counts (Seed),
// and of the windowed count (SeedWindowed); the join reads SeedJoin's
// JoinLeftTopic and JoinRightTopic.
const (
	PeerInputTopic       = "bench-peer-in"
	PeerWindowInputTopic = "bench-peer-window-in"
)

// PeerOptions configure RunPeer. Zero fields take the defaults.
type PeerOptions struct {
	// Brokers is the Apache Kafka cluster both sides run against; its
	// topics and groups named bench-* are deleted first. Required.
	Brokers    []string
	Records    int // records seeded per workload (the join: both sides together); default 1,000,000
	Keys       int // distinct keys; default 10,000
	Partitions int // partitions of every topic; default 4
	Rounds     int // rounds of each side per workload; default 3
	// Workloads to run, of PeerWorkloads; default all, in that order.
	Workloads []string
	// CommitInterval of both sides at-least-once; default 1 s.
	// EOSCommitInterval under exactly-once; default 100 ms (Kafka
	// Streams' default under exactly-once).
	CommitInterval, EOSCommitInterval time.Duration
	// CacheMaxBytes is both sides' record cache (Kafka Streams'
	// statestore.cache.max.bytes); default 10 MiB, both defaults.
	CacheMaxBytes int64
	// SessionTimeout is both sides' group session timeout in the
	// failover; default 10 s. FailoverRate is its steady input in
	// records per second, default 4,000, flowing for FailoverWarm
	// before the crash, default 10 s.
	SessionTimeout, FailoverWarm time.Duration
	FailoverRate                 int
	// Braid and KStreams return the command of a worker process of each
	// side with the given worker arguments: `braid bench peer-worker ARGS`
	// and `java -cp <peer classpath> io.braidstream.peer.Bench ARGS`.
	Braid, KStreams func(args []string) *exec.Cmd
	Out             io.Writer // where the report goes; default os.Stdout
}

func (o PeerOptions) withDefaults() PeerOptions {
	if o.Records == 0 {
		o.Records = 1_000_000
	}
	if o.Keys == 0 {
		o.Keys = 10_000
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if len(o.Workloads) == 0 {
		o.Workloads = PeerWorkloads
	}
	if o.CommitInterval == 0 {
		o.CommitInterval = time.Second
	}
	if o.EOSCommitInterval == 0 {
		o.EOSCommitInterval = 100 * time.Millisecond
	}
	if o.CacheMaxBytes == 0 {
		o.CacheMaxBytes = 10 << 20
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.FailoverWarm == 0 {
		o.FailoverWarm = 10 * time.Second
	}
	if o.FailoverRate == 0 {
		o.FailoverRate = 4000
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// PeerRun is one run of one side of a workload.
type PeerRun struct {
	Result
	// RSSBytes is the worker process's peak resident set (VmHWM) when the
	// input was committed.
	RSSBytes int64
	// OutRecords is how many records the run wrote to its output topic
	// (read committed under exactly-once).
	OutRecords int64
}

// PeerResult is one workload's median runs and ratio.
type PeerResult struct {
	Workload        string
	Braid, KStreams PeerRun // median by throughput; RSSBytes is the largest of the rounds
	// Ratio is Braid's records/s over Kafka Streams' (of the medians).
	Ratio float64
}

// RESULT returns the workload's RESULT line.
func (r PeerResult) RESULT() string {
	return fmt.Sprintf("RESULT peer-%s ratio=%.3f braid=%.0f kstreams=%.0f braid_rss_mb=%.0f kstreams_rss_mb=%.0f braid_out=%d kstreams_out=%d",
		r.Workload, r.Ratio, r.Braid.PerSecond(), r.KStreams.PerSecond(), float64(r.Braid.RSSBytes)/(1<<20),
		float64(r.KStreams.RSSBytes)/(1<<20), r.Braid.OutRecords, r.KStreams.OutRecords)
}

// RunPeer runs `braid bench peer`: for every workload it seeds its input
// once on opts.Brokers, then runs opts.Rounds rounds of Braid and Kafka
// Streams whose order alternates, each side a worker process of its own
// with a new application id (so a new consumer group), a new state dir, a
// new output topic and the same commit interval, cache size, guarantee and
// one thread. Each worker first makes an unmeasured warm-up pass over the
// whole input in the same process (another application of the same
// topology, closed before the measured one starts: the JVM's JIT warms, and
// Go's heap grows to its working size, as RunPipe found it must). A run is
// measured from the first input record its worker fetched (the worker says
// when; fetched rather than processed, since Braid's consumer buffers up to
// 50 MB before its first record is processed where Kafka Streams' pauses at
// 1,000 records a partition) to the moment the group's committed offsets,
// polled from the broker every 5 ms, cover every input record, the worker
// having closed its application (which commits) once it processed them:
// the same span, measured the same way, for both sides. It prints
// a line per run and per workload the RESULT line of PeerResult.
func RunPeer(ctx context.Context, opts PeerOptions) ([]PeerResult, error) {
	opts = opts.withDefaults()
	w := opts.Out
	if len(opts.Brokers) == 0 {
		return nil, errors.New("bench peer: no brokers: Kafka Streams runs against Apache Kafka (--brokers; make kafka starts one)")
	}
	if opts.Braid == nil || opts.KStreams == nil {
		return nil, errors.New("bench peer: the commands of both sides' workers are needed")
	}
	if opts.Records <= 0 || opts.Keys <= 0 || opts.Partitions <= 0 || opts.Rounds <= 0 {
		return nil, errors.New("bench peer: records, keys, partitions and rounds must be positive")
	}
	for _, wl := range opts.Workloads {
		if !slices.Contains(PeerWorkloads, wl) {
			return nil, fmt.Errorf("bench peer: unknown workload %q (known: %s)", wl, strings.Join(PeerWorkloads, ", "))
		}
	}
	c, err := openCluster(ctx, opts.Brokers, broker.Config{})
	if err != nil {
		return nil, fmt.Errorf("bench peer: %w", err)
	}
	defer c.close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...))
	if err != nil {
		return nil, fmt.Errorf("bench peer: %w", err)
	}
	defer cl.Close()
	p := &peerBench{opts: opts, brokers: c.brokers, cl: cl, adm: kadm.NewClient(cl)}
	fmt.Fprintf(w, "bench peer: %s; %d records, %d keys, %d partitions; Braid and Kafka Streams 4.4.0 one instance and thread each, cache %d bytes, commit every %v (%v exactly-once); %d rounds alternating, each process warmed up by a pass over the input first\n",
		c.name, opts.Records, opts.Keys, opts.Partitions, opts.CacheMaxBytes, opts.CommitInterval, opts.EOSCommitInterval, opts.Rounds)
	var results []PeerResult
	for _, wl := range opts.Workloads {
		if wl == PeerFailover {
			r, err := p.failover(ctx)
			if err != nil {
				return results, err
			}
			fmt.Fprintln(w, r.RESULT())
			fmt.Fprintln(w, r.SupervisedRESULT())
			continue
		}
		if wl == PeerRestore {
			r, err := p.restore(ctx)
			if err != nil {
				return results, err
			}
			fmt.Fprintln(w, r.RESULT())
			continue
		}
		r, err := p.workload(ctx, wl)
		if err != nil {
			return results, err
		}
		results = append(results, r)
		fmt.Fprintln(w, r.RESULT())
	}
	return results, nil
}

// peerBench is RunPeer's state.
type peerBench struct {
	opts    PeerOptions
	brokers []string
	cl      *kgo.Client
	adm     *kadm.Client
	seeded  map[string]bool
	runs    atomic.Int64
}

// input seeds workload's input once and returns its topics.
func (p *peerBench) input(ctx context.Context, workload string) ([]string, error) {
	if p.seeded == nil {
		p.seeded = map[string]bool{}
	}
	o := p.opts
	var topics []string
	var seed func() error
	switch workload {
	case PeerPipe, PeerCount, PeerCountEOS:
		topics = []string{PeerInputTopic}
		seed = func() error { return Seed(ctx, p.brokers, PeerInputTopic, o.Partitions, o.Records, o.Keys) }
	case PeerWindow:
		topics = []string{PeerWindowInputTopic}
		seed = func() error {
			return SeedWindowed(ctx, p.brokers, PeerWindowInputTopic, o.Partitions, o.Records, o.Keys, DefaultEventRate)
		}
	case PeerJoin:
		topics = []string{JoinLeftTopic, JoinRightTopic}
		seed = func() error { return SeedJoin(ctx, p.brokers, o.Partitions, o.Records/2, o.Keys) }
	}
	if !p.seeded[topics[0]] {
		if err := seed(); err != nil {
			return nil, fmt.Errorf("bench peer: seeding %s: %w", workload, err)
		}
		p.seeded[topics[0]] = true
	}
	return topics, nil
}

// workload measures one workload.
func (p *peerBench) workload(ctx context.Context, workload string) (PeerResult, error) {
	res := PeerResult{Workload: workload}
	inputs, err := p.input(ctx, workload)
	if err != nil {
		return res, err
	}
	var total int64
	for _, t := range inputs {
		n, err := topicRecords(ctx, p.adm, t)
		if err != nil {
			return res, fmt.Errorf("bench peer: %w", err)
		}
		total += n
	}
	sides := []struct {
		name string
		cmd  func([]string) *exec.Cmd
		runs []PeerRun
	}{{name: "braid", cmd: p.opts.Braid}, {name: "kstreams", cmd: p.opts.KStreams}}
	for round := range p.opts.Rounds {
		for k := range sides {
			i := k
			if round%2 == 1 {
				i = 1 - k
			}
			s := &sides[i]
			r, err := p.run(ctx, workload, s.name, s.cmd, inputs, total)
			label := fmt.Sprintf("round %d", round+1)
			if err != nil {
				return res, fmt.Errorf("bench peer: %s, %s, %s: %w", workload, s.name, label, err)
			}
			fmt.Fprintf(p.opts.Out, "  %-9s %-8s %-8s %9d records in %8v  %9s rec/s  peak RSS %5.0f MB  %d output records\n",
				workload, s.name, label, r.Records, r.Elapsed.Round(time.Millisecond), thousands(r.PerSecond()),
				float64(r.RSSBytes)/(1<<20), r.OutRecords)
			s.runs = append(s.runs, r)
		}
	}
	res.Braid, res.KStreams = medianPeerRun(sides[0].runs), medianPeerRun(sides[1].runs)
	if k := res.KStreams.PerSecond(); k > 0 {
		res.Ratio = res.Braid.PerSecond() / k
	}
	return res, nil
}

// medianPeerRun returns the run of median throughput, with the largest
// peak RSS of all.
func medianPeerRun(runs []PeerRun) PeerRun {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b PeerRun) int {
		switch x, y := a.PerSecond(), b.PerSecond(); {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	m := s[len(s)/2]
	for _, r := range runs {
		m.RSSBytes = max(m.RSSBytes, r.RSSBytes)
	}
	return m
}

// run runs one side's worker over the inputs until its group has
// committed total records, then stops it and counts its output.
func (p *peerBench) run(ctx context.Context, workload, side string, command func([]string) *exec.Cmd, inputs []string, total int64) (PeerRun, error) {
	n := p.runs.Add(1)
	appID := fmt.Sprintf("bench-peer-%s-%s-%d", workload, side, n)
	out := appID + "-out"
	for _, t := range []string{out, out + "-warm-up"} {
		if err := EnsureTopic(ctx, p.adm, t, p.opts.Partitions); err != nil {
			return PeerRun{}, err
		}
	}
	stateDir, err := os.MkdirTemp("", appID+"-")
	if err != nil {
		return PeerRun{}, err
	}
	defer os.RemoveAll(stateDir)
	args := peerWorkerArgs{workload: workload, bootstrap: strings.Join(p.brokers, ","), appID: appID, stateDir: stateDir,
		input: strings.Join(inputs, ","), output: out, guarantee: "at_least_once",
		commitIntervalMs: p.opts.CommitInterval.Milliseconds(), cacheMaxBytes: p.opts.CacheMaxBytes, threads: 1, warmUpRecords: total, stopAfterRecords: total}
	if workload == PeerCountEOS {
		args.workload, args.guarantee, args.commitIntervalMs = PeerCount, "exactly_once_v2", p.opts.EOSCommitInterval.Milliseconds()
	}
	w, err := startPeerWorker(command(args.list()))
	if err != nil {
		return PeerRun{}, err
	}
	defer w.stop()
	if _, err := w.await(ctx, "warm"); err != nil {
		return PeerRun{}, err
	}
	first, err := w.await(ctx, "first")
	if err != nil {
		return PeerRun{}, err
	}
	end, err := p.awaitCommitted(ctx, w, appID, inputs, total)
	if err != nil {
		return PeerRun{}, err
	}
	r := PeerRun{Result: Result{Records: int(total), Elapsed: end.Sub(time.UnixMilli(first.AtMs))}}
	if r.RSSBytes, err = peakRSS(w.cmd.Process.Pid); err != nil {
		return r, err
	}
	if err := w.stop(); err != nil {
		return r, err
	}
	iso := kgo.ReadUncommitted()
	if workload == PeerCountEOS {
		iso = kgo.ReadCommitted()
	}
	if r.OutRecords, err = readTopicAs(ctx, p.brokers, out, iso, func(*kgo.Record) error { return nil }); err != nil {
		return r, err
	}
	return r, p.deleteRunTopics(ctx, appID)
}

// awaitCommitted polls group's committed offsets of the inputs every 5 ms
// until they add up to total, and returns when they first did.
func (p *peerBench) awaitCommitted(ctx context.Context, w *peerWorker, group string, inputs []string, total int64) (time.Time, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var late <-chan time.Time // after the worker said it is done
	for {
		offs, err := p.adm.FetchOffsets(ctx, group)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("fetching the committed offsets of %s: %w", group, err)
		}
		var n int64
		offs.Each(func(o kadm.OffsetResponse) {
			if slices.Contains(inputs, o.Topic) && o.At > 0 {
				n += o.At
			}
		})
		if n >= total {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case e := <-w.events:
			if e.Event == "done" {
				// Closed, and so committed: what it committed is
				// final within a moment (a fetch's round trip).
				late = time.After(10 * time.Second)
			}
		case <-late:
			return time.Time{}, fmt.Errorf("the worker closed, but its group committed %d of %d input records\n%s", n, total, w.stderr.String())
		case <-w.exited:
			return time.Time{}, fmt.Errorf("the worker exited with %d of %d input records committed: %v\n%s", n, total, w.waitErr, w.stderr.String())
		case <-tick.C:
		}
	}
}

// deleteRunTopics deletes the run's output and internal topics (those
// named after its application id).
func (p *peerBench) deleteRunTopics(ctx context.Context, appID string) error {
	topics, err := p.adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics: %w", err)
	}
	var names []string
	for _, t := range topics.Names() {
		if strings.HasPrefix(t, appID+"-") {
			names = append(names, t)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return broker.DeleteTopics(ctx, p.adm, names...)
}

// peakRSS returns process pid's peak resident set (VmHWM).
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("reading the peak RSS of process %d: %w", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading the peak RSS of process %d: VmHWM %q: %w", pid, rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("reading the peak RSS of process %d: no VmHWM in /proc/%d/status", pid, pid)
}

// peerWorker is a running worker process and the events it printed.
type peerWorker struct {
	cmd     *exec.Cmd
	events  chan peerEvent
	stderr  *lockedBuffer
	exited  chan struct{} // closed when the process has exited
	waitErr error         // its exit, once exited is closed
	stopped bool

	// mu guards tasks, the last "tasks" event (the failover's workers
	// print them; the events channel may drop some).
	mu    sync.Mutex
	tasks map[string]peerTasks
}

func startPeerWorker(cmd *exec.Cmd) (*peerWorker, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &peerWorker{cmd: cmd, events: make(chan peerEvent, 16), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e peerEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event != "" {
				if e.Event == "tasks" {
					w.mu.Lock()
					w.tasks = e.Tasks
					w.mu.Unlock()
				}
				select {
				case w.events <- e:
				default: // nobody waits for it
				}
			}
		}
		w.waitErr = cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// await returns the worker's event name, failing if it exits or reports
// an error first.
func (w *peerWorker) await(ctx context.Context, name string) (peerEvent, error) {
	for {
		select {
		case e := <-w.events:
			if e.Event == name {
				return e, nil
			}
			if e.Event == "error" {
				return e, fmt.Errorf("the worker failed: %s\n%s", e.Message, w.stderr.String())
			}
		case <-w.exited:
			return peerEvent{}, fmt.Errorf("the worker exited before %q: %v\n%s", name, w.waitErr, w.stderr.String())
		case <-ctx.Done():
			return peerEvent{}, ctx.Err()
		}
	}
}

// stop ends the worker with SIGTERM (SIGKILL after a minute) and waits
// for it; it returns the worker's failure, if it failed.
func (w *peerWorker) stop() error {
	if w.stopped {
		return nil
	}
	w.stopped = true
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(time.Minute):
		w.cmd.Process.Kill()
		<-w.exited
		return fmt.Errorf("the worker did not stop within a minute of SIGTERM\n%s", w.stderr.String())
	}
	var exit *exec.ExitError
	if errors.As(w.waitErr, &exit) && exit.ExitCode() != 0 && exit.ExitCode() != 143 {
		return fmt.Errorf("the worker exited with %v\n%s", w.waitErr, w.stderr.String())
	}
	return nil
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and our reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return s
}

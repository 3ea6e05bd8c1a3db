package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The broker-faults scenario (RunFault): the broker as its own process
// with a data dir, behind a fault Proxy that it advertises, two workers
// committing every 200 ms, a producer writing through the fault, and one
// fault of the broker. Every worker must commit again within MaxResume
// of the broker's return, and the outputs must then pass the checks of a
// chaos run.

// MaxResume is how soon after the broker's return every worker must
// commit again for a fault to count as recovered.
const MaxResume = 10 * time.Second

// faultKind is what happens to the broker.
type faultKind int

const (
	// killRestart kills the broker with SIGKILL and starts it again on
	// the same data dir and port.
	killRestart faultKind = iota
	// stopCont stops the broker with SIGSTOP and continues it with
	// SIGCONT: a broker that hangs, past the workers' session timeout.
	stopCont
	// cut cuts every connection at the proxy and refuses new ones: a
	// network partition.
	cut
	// The faults of an Apache Kafka cluster (FaultOptions.Kafka), where
	// stopCont stops one node (see kafkafaults.go).

	// leaderKill kills the node that leads the most of the input,
	// changelog and sink partitions (not the active controller) and
	// starts it again after the fault's duration.
	leaderKill
	// controllerKill kills the active controller and starts it again.
	controllerKill
	// clusterRestart stops every node and starts them again on their
	// data dirs and ports.
	clusterRestart
)

var faultKindNames = []string{killRestart: "kill-restart", stopCont: "stop", cut: "cut",
	leaderKill: "leader-kill", controllerKill: "controller-kill", clusterRestart: "cluster-restart"}

// onKafka says whether the fault is one of an Apache Kafka cluster, on
// the embedded broker, or both (stop).
func (k faultKind) onKafka() bool { return k != killRestart && k != cut }

func (k faultKind) onEmbedded() bool { return k <= cut }

// Fault is one fault of the broker: what happens to it and for how long
// it is gone. Its name, as ParseFault reads it, is the kind and the
// duration: kill-restart-5s, stop-15s, cut-30s.
type Fault struct {
	kind faultKind
	For  time.Duration
}

func (f Fault) String() string {
	d := f.For.String()
	if f.For%time.Second == 0 {
		d = fmt.Sprintf("%ds", f.For/time.Second)
	}
	return faultKindNames[f.kind] + "-" + d
}

// BrokerFaults are the faults `make chaos` runs, each under both
// guarantees.
var BrokerFaults = []string{"kill-restart-5s", "stop-15s", "kill-restart-60s", "cut-30s"}

// ParseFault reads a fault's name: kill-restart-D, stop-D or cut-D (the
// embedded broker's), leader-kill-D, stop-D, controller-kill-D or
// cluster-restart-D (Kafka's), with D a positive Go duration.
func ParseFault(name string) (Fault, error) {
	for kind, prefix := range faultKindNames {
		d, ok := strings.CutPrefix(name, prefix+"-")
		if !ok {
			continue
		}
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			return Fault{}, fmt.Errorf("broker fault %q: %q is not a positive duration", name, d)
		}
		return Fault{kind: faultKind(kind), For: dur}, nil
	}
	return Fault{}, fmt.Errorf("broker fault %q: want kill-restart-D, stop-D or cut-D, or on Kafka leader-kill-D, stop-D, controller-kill-D or cluster-restart-D (D a duration, e.g. 5s)", name)
}

// ParseFaults reads a comma-separated list of faults; "all" is
// BrokerFaults (KafkaFaults when kafka), "none" or "" none. A fault of
// the other broker is an error.
func ParseFaults(list string, kafka bool) ([]Fault, error) {
	switch list {
	case "", "none":
		return nil, nil
	case "all":
		list = strings.Join(BrokerFaults, ",")
		if kafka {
			list = strings.Join(KafkaFaults, ",")
		}
	}
	var faults []Fault
	for name := range strings.SplitSeq(list, ",") {
		f, err := ParseFault(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		if err := f.check(kafka); err != nil {
			return nil, err
		}
		faults = append(faults, f)
	}
	return faults, nil
}

// FaultOptions configure one broker fault on a fresh setup. The embedded
// Options say what they say for a chaos run, except that Workers
// defaults to 2, CommitInterval to 200 ms, Records and Duration follow
// from Rate and the fault, and Kills must be 0.
type FaultOptions struct {
	Options
	Fault Fault

	// Rate is inputs per second (default 500): Records defaults to Rate
	// times Duration, and Duration to settleAllowance, the fault,
	// MaxResume and 5 s more, so that inputs keep coming until every
	// worker should have resumed.
	Rate int

	// ResumeWait bounds the wait, after the broker's return, for every
	// worker's first commit (default 30 s): past MaxResume, so that a slow
	// resume is measured and only one that does not come fails the run.
	ResumeWait time.Duration
}

// settleAllowance is the time the producer's schedule gives the group to
// settle before the fault, which comes as soon as every worker is
// committing (it takes a few seconds).
const settleAllowance = 10 * time.Second

func (o FaultOptions) withDefaults() (FaultOptions, error) {
	if o.Kills != 0 {
		return o, errors.New("chaos: a broker fault kills no worker; Kills must be 0")
	}
	if o.Fault.For <= 0 {
		return o, errors.New("chaos: FaultOptions.Fault is required")
	}
	if err := o.Fault.check(o.Kafka != nil); err != nil {
		return o, fmt.Errorf("chaos: %w", err)
	}
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.CommitInterval == 0 {
		o.CommitInterval = 200 * time.Millisecond
	}
	if o.Rate == 0 {
		o.Rate = 500
	}
	if o.ResumeWait == 0 {
		o.ResumeWait = 30 * time.Second
	}
	if o.Duration == 0 {
		o.Duration = settleAllowance + o.Fault.For + MaxResume + 5*time.Second
		if o.Kafka != nil {
			o.Duration += kafkaAllowance(o.Fault.kind)
		}
	}
	if o.Records == 0 {
		o.Records = int(o.Duration.Seconds() * float64(o.Rate))
	}
	var err error
	o.Options, err = o.Options.withDefaults()
	if err == nil && (o.Rate < 0 || o.ResumeWait < MaxResume) {
		err = fmt.Errorf("chaos: a negative Rate, or a ResumeWait below MaxResume (%v)", MaxResume)
	}
	return o, err
}

// FaultReport is what one broker fault found: the checks of the outputs,
// as a chaos run's Report, and how soon each worker resumed.
type FaultReport struct {
	Report
	Fault Fault

	// Resume is, per worker, the time from the broker's return (the
	// restarted broker listening, SIGCONT, the proxy restored) to the end
	// of the worker's first commit that began after it. A worker that
	// did not commit (within ResumeWait, or before it or another worker
	// exited) has the time waited here and is listed in Unresumed.
	Resume    map[string]time.Duration
	Unresumed []string

	// During is, on Kafka, per worker, the time from the fault to the end
	// of the worker's first commit that began after it while the node
	// was still down: the cluster's other nodes took over. A worker
	// missing from it made no commit then. After a node's kill
	// (leader-kill, controller-kill) every worker must be in it; after a
	// stop it is measured only. Nil for faults of the whole broker.
	During         map[string]time.Duration
	DuringRequired bool

	// BrokerLost counts acknowledged inputs the input topic did not hold
	// after the fault; BrokerDuplicated the extra copies it held of
	// inputs, which a produce retried across a broker kill leaves (kfake
	// keeps the idempotent producers' sequence windows only at a clean
	// stop). The checks count the outputs against what the topic holds.
	BrokerLost, BrokerDuplicated int

	// Failure is the error of a run that failed before its checks (a
	// worker that did not resume or exited, inputs never committed);
	// empty when the run completed.
	Failure string
}

// MaxResume is the longest resume of the report's workers.
func (r FaultReport) MaxResume() time.Duration {
	longest := time.Duration(0)
	for _, d := range r.Resume {
		longest = max(longest, d)
	}
	return longest
}

// Err says why the fault does not count as recovered: a worker that did
// not resume within MaxResume, inputs the broker lost, or a guarantee
// that did not hold (Report.Err).
func (r FaultReport) Err() error {
	var errs []error
	if r.Failure != "" {
		errs = append(errs, fmt.Errorf("%s (%s) failed before its checks: %s", r.Fault, r.Guarantee, r.Failure))
	}
	for _, w := range slices.Sorted(maps.Keys(r.Resume)) {
		switch d := r.Resume[w].Round(time.Millisecond); {
		case slices.Contains(r.Unresumed, w):
			errs = append(errs, fmt.Errorf("after %s (%s), %s made no commit in the %v after the broker's return", r.Fault, r.Guarantee, w, d))
		case d > MaxResume:
			errs = append(errs, fmt.Errorf("after %s (%s), %s resumed in %v, over %v", r.Fault, r.Guarantee, w, d, MaxResume))
		}
	}
	if r.DuringRequired {
		for _, w := range slices.Sorted(maps.Keys(r.Resume)) {
			if _, ok := r.During[w]; !ok {
				errs = append(errs, fmt.Errorf("during %s (%s), %s made no commit while the node was down: processing did not go on", r.Fault, r.Guarantee, w))
			}
		}
	}
	if r.BrokerLost > 0 {
		errs = append(errs, fmt.Errorf("after %s, the broker lost %d acknowledged inputs", r.Fault, r.BrokerLost))
	}
	if err := r.Report.Err(); err != nil {
		errs = append(errs, fmt.Errorf("after %s: %w", r.Fault, err))
	}
	return errors.Join(errs...)
}

// ResultLine is the fault's one-line summary, the progress line of the
// driver.
func (r FaultReport) ResultLine() string {
	var resumes []string
	for _, w := range slices.Sorted(maps.Keys(r.Resume)) {
		resumes = append(resumes, fmt.Sprintf("%s=%dms", w, r.Resume[w].Milliseconds()))
	}
	during := ""
	if r.During != nil {
		var ds []string
		for _, w := range slices.Sorted(maps.Keys(r.Resume)) {
			if d, ok := r.During[w]; ok {
				ds = append(ds, fmt.Sprintf("%s=%dms", w, d.Milliseconds()))
			} else {
				ds = append(ds, w+"=none")
			}
		}
		during = " during " + strings.Join(ds, " ")
	}
	return fmt.Sprintf("FAULT %s %s recovered=%v resume %s%s inputs=%d duplicates=%d lost=%d wrong_counts=%d broker_lost=%d broker_duplicated=%d",
		r.Fault, r.Guarantee, r.Err() == nil, strings.Join(resumes, " "), during, r.Inputs, r.Duplicates, r.Lost, r.WrongCounts, r.BrokerLost, r.BrokerDuplicated)
}

// FaultsResultLine is the scenario's result over every fault run:
// recovered counts the runs whose Err is nil, lost the inputs missing
// from the outputs and the acknowledged inputs the broker lost, and
// duplicates only the exactly-once runs' duplicates.
func FaultsResultLine(reps []FaultReport) string {
	recovered, lost, dups, longest := 0, 0, 0, time.Duration(0)
	for _, r := range reps {
		if r.Err() == nil {
			recovered++
		}
		lost += r.Lost + r.BrokerLost
		if r.Guarantee == streams.ExactlyOnce {
			dups += r.Duplicates
		}
		longest = max(longest, r.MaxResume())
	}
	return fmt.Sprintf("RESULT broker-faults faults=%d recovered=%d lost=%d duplicates=%d max_resume_ms=%d",
		len(reps), recovered, lost, dups, longest.Milliseconds())
}

// CommitLine is the line a worker appends to its commit log (the
// worker's --commit-log) after a commit that ended at end and took took.
func CommitLine(end time.Time, took time.Duration) string {
	return fmt.Sprintf("commit end_us=%d took_us=%d\n", end.UnixMicro(), took.Microseconds())
}

// commitSpan is one commit of a commit log: when it began and ended.
type commitSpan struct{ start, end time.Time }

// readCommitLog reads a worker's commit log; a log not yet written is
// empty. A line cut short by a kill is skipped.
func readCommitLog(path string) ([]commitSpan, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var spans []commitSpan
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var end, took int64
		if n, _ := fmt.Sscanf(sc.Text(), "commit end_us=%d took_us=%d", &end, &took); n == 2 {
			e := time.UnixMicro(end)
			spans = append(spans, commitSpan{start: e.Add(-time.Duration(took) * time.Microsecond), end: e})
		}
	}
	return spans, sc.Err()
}

// waitCommits waits until every worker has made n commits that began at
// or after since, and returns when each one's nth such commit ended.
// After timeout it returns what it has and an error naming the workers
// short of n, with their logs' tails; a worker that exits is an error at
// once.
func waitCommits(ctx context.Context, ws *workers, since time.Time, n int, timeout time.Duration, what string) (map[string]time.Time, error) {
	deadline := time.Now().Add(timeout)
	first := make(map[string]time.Time)
	for {
		for i := range ws.procs {
			name := ws.name(i)
			if _, ok := first[name]; ok {
				continue
			}
			spans, err := readCommitLog(ws.commitLogPath(i))
			if err != nil {
				return first, fmt.Errorf("reading %s's commit log: %w", name, err)
			}
			seen := 0
			for _, s := range spans {
				if !s.start.Before(since) {
					if seen++; seen == n {
						first[name] = s.end
						break
					}
				}
			}
		}
		if len(first) == len(ws.procs) {
			return first, nil
		}
		if err := ws.checkAlive(); err != nil {
			return first, err
		}
		if time.Now().After(deadline) {
			var missing []string
			var tails strings.Builder
			for i := range ws.procs {
				if _, ok := first[ws.name(i)]; !ok {
					missing = append(missing, ws.name(i))
					tails.WriteString(tailFile(ws.logPath(i), 30) + "\n")
				}
			}
			commits := "no commit"
			if n > 1 {
				commits = fmt.Sprintf("fewer than %d commits", n)
			}
			return first, fmt.Errorf("%s: %s made %s within %v; the logs end:\n%s", what, strings.Join(missing, " and "), commits, timeout, tails.String())
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return first, err
		}
	}
}

// faultedBroker is the broker process of a fault run, which a
// kill-restart replaces.
type faultedBroker struct {
	*broker
	braid, dataDir, logPath string
	partitions              int
	advertise               string
}

func (b *faultedBroker) start(ctx context.Context, listen string) error {
	p, err := startBroker(ctx, b.braid, listen, b.dataDir, b.logPath, b.partitions, "--advertise", b.advertise)
	if err != nil {
		return err
	}
	b.broker = p
	return nil
}

// inject does f to the broker and returns when the broker is back: the
// moment the workers' resume is timed from.
func (b *faultedBroker) inject(ctx context.Context, f Fault, proxy *Proxy) (time.Time, error) {
	switch f.kind {
	case killRestart:
		b.kill()
		if err := sleepCtx(ctx, f.For); err != nil {
			return time.Time{}, err
		}
		if err := b.start(ctx, b.addr); err != nil {
			return time.Time{}, fmt.Errorf("restarting the broker after %s: %w", f, err)
		}
	case stopCont:
		if stopSignal == nil {
			return time.Time{}, fmt.Errorf("%s: this system has no SIGSTOP", f)
		}
		if err := b.cmd.Process.Signal(stopSignal); err != nil {
			return time.Time{}, fmt.Errorf("stopping the broker: %w", err)
		}
		err := sleepCtx(ctx, f.For)
		// Continued even when the run ends meanwhile, so that it can be
		// stopped.
		if cerr := b.cmd.Process.Signal(contSignal); cerr != nil {
			return time.Time{}, fmt.Errorf("continuing the broker: %w", cerr)
		}
		if err != nil {
			return time.Time{}, err
		}
	case cut:
		proxy.Cut()
		err := sleepCtx(ctx, f.For)
		proxy.Restore()
		if err != nil {
			return time.Time{}, err
		}
	}
	return time.Now(), nil
}

// RunFault runs one broker fault on a fresh setup, as o says, and checks
// the outputs. Like Run, it returns an error when the run itself fails (a
// worker that exits or does not resume within ResumeWait, inputs not
// committed in time), and otherwise the report, whose Err says whether
// the fault counts as recovered. Every process it starts is stopped and
// waited for before it returns.
func RunFault(ctx context.Context, o FaultOptions) (rep FaultReport, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return rep, err
	}
	began := time.Now()
	rep = FaultReport{Report: Report{Guarantee: o.Guarantee, Seed: o.Seed}, Fault: o.Fault}
	defer func() {
		rep.Elapsed = time.Since(began)
		if err != nil {
			rep.Failure = err.Error()
		}
	}()
	var logs string
	var cleanup func()
	if rep.Dir, logs, cleanup, err = runDir(o.Options, "braid-broker-fault-"); err != nil {
		return rep, err
	}
	defer cleanup()
	say := func(format string, args ...any) {
		fmt.Fprintf(o.Progress, "broker-faults %s %s %6.1fs  %s\n", o.Fault, o.Guarantee, time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	say("seed %d, %d inputs over %d keys in %v, %d workers committing every %v, logs in %s", o.Seed, o.Records, o.Keys, o.Duration, o.Workers, o.CommitInterval, logs)

	var (
		brokers []string
		inject  func(context.Context, *workers, *FaultReport) (time.Time, error)
	)
	if o.Kafka != nil {
		if brokers, err = clearKafka(o.Kafka, say); err != nil {
			return rep, err
		}
		inject = func(ctx context.Context, ws *workers, rep *FaultReport) (time.Time, error) {
			return injectKafka(ctx, o.Kafka, o.Fault, ws, rep, say)
		}
	} else {
		proxy, err := StartProxy()
		if err != nil {
			return rep, err
		}
		defer proxy.Close()
		brk := &faultedBroker{braid: o.Braid, dataDir: filepath.Join(rep.Dir, "broker"), logPath: filepath.Join(logs, "broker.log"),
			partitions: o.Partitions, advertise: proxy.Addr()}
		if err := brk.start(ctx, ""); err != nil {
			return rep, err
		}
		// brk.broker is the restarted one after a kill-restart; the fault is
		// over by the time this runs.
		defer func() {
			if serr := brk.stop(30 * time.Second); serr != nil && err == nil {
				err = fmt.Errorf("stopping broker: %w", serr)
			}
		}()
		proxy.SetTarget(brk.addr)
		say("broker listening on %s behind the proxy at %s", brk.addr, proxy.Addr())
		brokers = []string{proxy.Addr()}
		inject = func(ctx context.Context, _ *workers, _ *FaultReport) (time.Time, error) {
			back, err := brk.inject(ctx, o.Fault, proxy)
			if err == nil {
				say("the broker is back (listening on %s); waiting for every worker's next commit", brk.addr)
			}
			return back, err
		}
	}
	cl, err := connect(ctx, brokers, o.Partitions)
	if err != nil {
		return rep, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ws := newWorkers(o.Options, strings.Join(brokers, ","), rep.Dir, logs, true)
	defer ws.stop(10 * time.Second) // a no-op once the workers were stopped
	if err := ws.startAll(); err != nil {
		return rep, err
	}
	say("started %d workers", o.Workers)

	sent, err := produceDuring(ctx, cl, adm, ws, o.Options, say, func(ctx context.Context) error {
		return faultAndResume(ctx, o, inject, func(ctx context.Context) error { return nudge(ctx, cl, o.Partitions) }, ws, &rep, say)
	})
	if err != nil {
		return rep, err
	}
	rep.Inputs = sent.inputs
	if err := waitCommitted(ctx, adm, ws, o.CompletionTimeout, say, nil); err != nil {
		return rep, err
	}
	say("the group committed every input; stopping the workers")
	if err := ws.stop(30 * time.Second); err != nil {
		return rep, fmt.Errorf("chaos: %w", err)
	}
	in, err := readTopics(ctx, brokers, []string{InputTopic}, time.Minute)
	if err != nil {
		return rep, fmt.Errorf("reading the inputs back: %w", err)
	}
	var held truth
	held, rep.BrokerLost, rep.BrokerDuplicated = inputTruth(sent, in.records[InputTopic])
	if err := checkOutputs(ctx, brokers, o.Guarantee, held, &rep.Report); err != nil {
		return rep, err
	}
	say("%s", rep.ResultLine())
	if d := rep.Details(); d != "" {
		say("first problems:\n%s", strings.TrimRight(d, "\n"))
	}
	return rep, nil
}

// faultAndResume waits for every worker to be committing in a settled
// group, injects the fault, and times each worker's resume into rep.
func faultAndResume(ctx context.Context, o FaultOptions, inject func(context.Context, *workers, *FaultReport) (time.Time, error), nudge func(context.Context) error, ws *workers, rep *FaultReport, say func(string, ...any)) error {
	// Settled: every worker has made settledCommits commits since all of
	// them had made one, so the group's first rebalances are behind it
	// and it has been processing for a while.
	const settle, settledCommits = 2 * time.Minute, 10
	first, err := waitCommits(ctx, ws, time.Time{}, 1, settle, "before the fault")
	if err != nil {
		return err
	}
	all := time.Time{}
	for _, t := range first {
		if t.After(all) {
			all = t
		}
	}
	if _, err := waitCommits(ctx, ws, all, settledCommits, settle, "before the fault"); err != nil {
		return err
	}
	say("every worker is committing; %s", o.Fault)
	returned, err := inject(ctx, ws, rep)
	if err != nil {
		return err
	}
	// A broker slow to come back (a JVM starting on a loaded machine took
	// 33 s) may return after the last input was processed, when no worker
	// has anything to commit: a record for every partition gives each
	// one something. One is not enough: a worker that took another's
	// partitions in a rebalance after the return, once the other
	// committed their records, had nothing to commit (make test on Apache
	// Kafka, stop-15s). So every partition gets one a second until every
	// worker committed.
	nctx, stopNudging := context.WithCancel(ctx)
	nudged := make(chan error, 1)
	go func() { nudged <- nudgeEvery(nctx, nudge, time.Second) }()
	resumed, err := waitCommits(ctx, ws, returned, 1, o.ResumeWait, fmt.Sprintf("after %s (%s) the broker was back, but", o.Fault, o.Guarantee))
	stopNudging()
	if nerr := <-nudged; nerr != nil && err == nil {
		return fmt.Errorf("producing a record to every partition after %s: %w", o.Fault, nerr)
	}
	gaveUp := time.Since(returned)
	rep.Resume = make(map[string]time.Duration)
	for i := range ws.procs {
		name := ws.name(i)
		if t, ok := resumed[name]; ok {
			rep.Resume[name] = t.Sub(returned)
		} else {
			rep.Resume[name] = gaveUp
			rep.Unresumed = append(rep.Unresumed, name)
		}
	}
	if err != nil {
		var stacks strings.Builder
		for i := range ws.procs {
			if slices.Contains(rep.Unresumed, ws.name(i)) {
				stacks.WriteString(ws.procs[i].stacks(ws.logPath(i), "braidstream/braid/runtime"))
			}
		}
		return fmt.Errorf("%w\n%s", err, stacks.String())
	}
	var resumes []string
	for _, w := range slices.Sorted(maps.Keys(rep.Resume)) {
		resumes = append(resumes, fmt.Sprintf("%s in %v", w, rep.Resume[w].Round(time.Millisecond)))
	}
	say("resumed: %s", strings.Join(resumes, ", "))
	return nil
}

// inputTruth is the truth of what the input topic holds (recs, read back
// after the run) rather than of what was sent: the outputs must follow
// the topic. It also counts the acknowledged inputs the topic lost and
// the extra copies it holds.
func inputTruth(sent truth, recs []*kgo.Record) (held truth, lost, duplicated int) {
	held = truth{perKey: sent.perKey, windows: make(map[windowKey]int64), copies: make(map[inputID]int), keyInputs: make(map[string]int64)}
	for _, r := range recs {
		key := string(r.Key)
		if isFlushKey(key) {
			continue
		}
		var in Input
		if err := json.Unmarshal(r.Value, &in); err != nil || in.Key != key {
			continue // no input the producer wrote: the checks find no output of it
		}
		held.copies[inputID{key, in.Seq}]++
		held.keyInputs[key]++
		held.windows[windowKey{key, windowStart(r.Timestamp.UnixMilli())}]++
		held.inputs++
	}
	for key, n := range sent.perKey {
		for seq := int64(1); seq <= n; seq++ {
			switch c := held.copies[inputID{key, seq}]; {
			case c == 0:
				lost++
			case c > 1:
				duplicated += c - 1
			}
		}
	}
	return held, lost, duplicated
}

// nudgeEvery calls nudge at once and then every interval until ctx ends.
// It returns nudge's first error unless ctx ended.
func nudgeEvery(ctx context.Context, nudge func(context.Context) error, interval time.Duration) error {
	for {
		if err := nudge(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := sleepCtx(ctx, interval); err != nil {
			return nil
		}
	}
}

// nudge produces a record of a flush key, which the checks leave out, to
// every partition of the input, with a timestamp long past: a late record
// that a task drops from its windows, advancing no stream time, but
// processes, so that its worker commits.
func nudge(ctx context.Context, cl *kgo.Client, partitions int) error {
	recs := make([]*kgo.Record, 0, partitions)
	for p, key := range flushKeys(partitions) {
		recs = append(recs, &kgo.Record{
			Topic:     InputTopic,
			Key:       []byte(key),
			Value:     encodeInput(Input{Key: key, Seq: int64(p)}),
			Timestamp: time.UnixMilli(1),
		})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
)

// Names RunFailover uses. Each run has its own input and output topics,
// "<prefix>-<run>", and its own application id, "bench-failover-<run>-<n>",
// so its changelog and state start empty.
const (
	FailoverInputTopic  = "bench-failover-in"
	FailoverOutputTopic = "bench-failover-out"
	// FailoverStore is the count's store; its changelog is
	// "<application id>-counts-changelog".
	FailoverStore = "counts"
	// FailoverVictim is the instance RunFailover crashes.
	FailoverVictim = "instance-1"
)

// FailoverTarget is the ratio of the largest recovery without standbys to
// the largest with one that the failover benchmark must reach.
const FailoverTarget = 5.0

// FailoverOptions configure RunFailover. Zero fields take the defaults,
// which are the setup.
type FailoverOptions struct {
	Records    int // input records seeded per run, one changelog record each; default 1,000,000
	Keys       int // distinct keys; default 100,000
	Partitions int // partitions of every topic; default 8
	Instances  int // instances the Supervisor runs; default 3
	// SessionTimeout is the group session timeout, which bounds how long
	// a crash nobody sees takes to detect; the Supervisor sees its
	// crashes and removes the member at once, and the others learn of the
	// rebalance at their next heartbeat. Default 10 s.
	SessionTimeout time.Duration
	// Rate is the steady input, in records per second, produced from the
	// start of each run to its end. Default 20,000.
	Rate int
	// CommitInterval of the App; default 100 ms.
	CommitInterval time.Duration
	// AcceptableRecoveryLag is the App's (see streams.Config); default
	// the App's, 10,000 records. It must be below a task's changelog for
	// the assignor to tell an instance with a standby from one without:
	// at a smaller size than the default's 125,000 records per task, lower
	// it.
	AcceptableRecoveryLag int64
	// Timeout bounds the wait for every moved task's failover event after
	// the crash; default 2 minutes. SetupTimeout bounds each wait before
	// the crash (the backlog processed, the group settled); default 5
	// minutes.
	Timeout, SetupTimeout time.Duration
	Out                   io.Writer // where the report goes; default os.Stdout
	// Brokers is the cluster to run against (bootstrap addresses), whose
	// topics and groups named bench-* are deleted first; empty starts an
	// embedded broker for the run.
	Brokers []string
}

func (o FailoverOptions) withDefaults() FailoverOptions {
	if o.Records == 0 {
		o.Records = 1_000_000
	}
	if o.Keys == 0 {
		o.Keys = 100_000
	}
	if o.Partitions == 0 {
		o.Partitions = 8
	}
	if o.Instances == 0 {
		o.Instances = 3
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.Rate == 0 {
		o.Rate = 20_000
	}
	if o.CommitInterval == 0 {
		o.CommitInterval = 100 * time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.SetupTimeout == 0 {
		o.SetupTimeout = 5 * time.Minute
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// Spread is the median and the maximum of a set of durations.
type Spread struct{ Median, Max time.Duration }

func spreadOf(ds []time.Duration) Spread {
	if len(ds) == 0 {
		return Spread{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Max: s[len(s)-1]}
}

// FailoverSpec is what a failover run varies.
type FailoverSpec struct {
	Standbys  int
	Protocol  streams.RebalanceProtocol
	Guarantee streams.Guarantee
}

func (s FailoverSpec) String() string {
	return fmt.Sprintf("%s, %s, %s", standbyLabel(s.Standbys), s.Protocol, s.Guarantee)
}

// FailoverRun is what one crash measured.
type FailoverRun struct {
	FailoverSpec
	ApplicationID string
	// Changelog counts the count's changelog records just before the
	// crash: at least Records.
	Changelog int64
	// Moved are the tasks the crashed instance ran, Tasks their
	// failovers, in the same order.
	Moved []streams.TaskID
	Tasks []FailoverTask
	// Over the moved tasks.
	Detection, Recovery, Downtime Spread
	Restored                      int64
	// Stayed are the tasks that did not move; StayedGap is the longest
	// time one of them went without processing a record, from the crash
	// until a second after the last moved task resumed, while its input
	// kept arriving.
	Stayed    []streams.TaskID
	StayedGap time.Duration
	// Traded are the survivors' tasks that the failover moved from one
	// survivor to another (the assignor may trade one so that a crashed
	// task's caught-up standby takes over); TradedGap is their longest
	// gap, measured as StayedGap. A task that moves pauses under any
	// protocol, so they do not count as tasks that stayed.
	Traded    []streams.TaskID
	TradedGap time.Duration
	// QuietGap is the same measure over the same tasks for quietWindow
	// just before the crash, with no rebalance: what processing pauses
	// on its own.
	QuietGap time.Duration
	// ReaderStall, under exactly-once only, is the longest time from the
	// crash until a read-committed reader of the sink received a result
	// of an input record produced after the crash, over the partitions
	// the crashed instance wrote to.
	ReaderStall time.Duration
	// Produced counts the steady input records of the run.
	Produced int64
}

// FailoverTask is one moved task's failover, with its recovery split
// into phases as the new owner's hooks saw them.
type FailoverTask struct {
	streams.FailoverEvent
	// Changelog counts the records of the task's changelog partition
	// just before the crash.
	Changelog int64
	// Assign is from AssignedAt until the new owner reported the task
	// assigned (TaskAssignedHook): the work of its assignment callback
	// (promoting replicas, opening stores, placing new replicas, listing
	// changelog ends) before the task can fetch or restore.
	Assign time.Duration
	// Restore is from then until the end of its restore (RestoreHook;
	// zero when it restored nothing).
	Restore time.Duration
	// FirstBatch is from then until ResumedAt: fetching the input the
	// task missed, until its first record is processed (the new owner
	// processes the tasks that just arrived before the others). Assign,
	// Restore and FirstBatch add up to Recovery.
	FirstBatch time.Duration
}

// FailoverReport is what RunFailover measured.
type FailoverReport struct {
	Records, Keys, Partitions, Instances int
	SessionTimeout                       time.Duration
	Rate                                 int
	GOMAXPROCS                           int
	// Standby is the main run: one standby, cooperative, at-least-once.
	// Eager, NoStandby and ExactlyOnce each change one thing of it.
	Standby, Eager, NoStandby, ExactlyOnce FailoverRun
	// Ratio is NoStandby.Recovery.Max over Standby.Recovery.Max.
	Ratio float64
}

// failoverSpecs are the runs of RunFailover, in order.
var failoverSpecs = []FailoverSpec{
	{Standbys: 1, Protocol: streams.RebalanceCooperative, Guarantee: streams.AtLeastOnce},
	{Standbys: 1, Protocol: streams.RebalanceEager, Guarantee: streams.AtLeastOnce},
	{Standbys: 0, Protocol: streams.RebalanceCooperative, Guarantee: streams.AtLeastOnce},
	{Standbys: 1, Protocol: streams.RebalanceCooperative, Guarantee: streams.ExactlyOnce},
}

// RunFailover runs `braid bench failover`: on an embedded broker, four
// runs of opts.Instances supervised instances of GroupByKey().Count()
// (record cache off, so every input record writes one changelog record):
// with one standby replica per task under the cooperative protocol and
// at-least-once, then the same under the eager protocol, with no standby,
// and under exactly-once. Each run seeds
// its own input topic with opts.Records records over opts.Keys keys,
// produces steady input at opts.Rate records per second for its whole
// length, waits until the seeded backlog is committed and (with standbys)
// every task's standby has caught up, crashes FailoverVictim and waits for
// a streams.FailoverEvent for every task that instance ran. It prints each
// task's move, the medians and maxima of detection, recovery and
// downtime, the longest processing gap of the tasks that stayed, and
// under exactly-once how long a read-committed reader of the sink waited;
// and last
//
//	RESULT failover ratio=<max recovery no-standby / max recovery standby> standby_recovery_max_ms=<..> nostandby_recovery_max_ms=<..> standby_downtime_max_ms=<..> stayed_gap_max_ms=<cooperative> eager_stayed_gap_max_ms=<eager> detection_max_ms=<..> session_timeout_ms=<..> eos_reader_stall_ms=<..>
//
// It returns an error if a run fails or a moved task's failover is not
// reported within opts.Timeout; it does not judge the ratio (see
// FailoverTarget).
func RunFailover(ctx context.Context, opts FailoverOptions) (FailoverReport, error) {
	opts = opts.withDefaults()
	rep := FailoverReport{
		Records: opts.Records, Keys: opts.Keys, Partitions: opts.Partitions, Instances: opts.Instances,
		SessionTimeout: opts.SessionTimeout, Rate: opts.Rate, GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	if opts.Records < 0 || opts.Keys < 0 || opts.Partitions < 0 || opts.Instances < 0 || opts.SessionTimeout < 0 ||
		opts.Rate < 0 || opts.CommitInterval < 0 || opts.AcceptableRecoveryLag < 0 || opts.Timeout < 0 || opts.SetupTimeout < 0 {
		return rep, errors.New("bench failover: records, keys, partitions, instances, session timeout, rate, commit interval and timeouts must not be negative")
	}
	if opts.Instances < 2 {
		return rep, fmt.Errorf("bench failover: %d instances: need at least 2, one to crash and one to take its tasks", opts.Instances)
	}

	// The embedded broker does not compact during the runs (startBroker):
	// a compaction stalls every client at once (gaps of 500 ms, in tasks
	// that stay and before any crash) and shrinks the changelog the run
	// without standby restores to about a record per key.
	bc, err := openCluster(ctx, opts.Brokers, broker.Config{Partitions: opts.Partitions})
	if err != nil {
		return rep, fmt.Errorf("bench failover: %w", err)
	}
	defer bc.close()
	brokers := bc.brokers
	where := bc.name
	if len(opts.Brokers) == 0 {
		where += " (not compacting)"
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return rep, fmt.Errorf("bench failover: %w", err)
	}
	defer cl.Close()

	w := opts.Out
	fmt.Fprintf(w, "bench failover: %d instances, %d partitions, count over %d keys with %d changelog records per run, steady input %d rec/s, session timeout %v, commit every %v, GOMAXPROCS=%d, %s\n",
		opts.Instances, opts.Partitions, opts.Keys, opts.Records, opts.Rate, opts.SessionTimeout, opts.CommitInterval, rep.GOMAXPROCS, where)
	fmt.Fprintf(w, "per moved task: detection = crash to the new owner's assignment; recovery = assignment to its first processed record\n"+
		"  = assign (its assignment callback) + restore (to the restore's end) + batch (fetching what it missed, to its first record);\n"+
		"  downtime = its last record on %s to its first record on the new owner\n", FailoverVictim)

	runs := []*FailoverRun{&rep.Standby, &rep.Eager, &rep.NoStandby, &rep.ExactlyOnce}
	for i, spec := range failoverSpecs {
		run, err := failoverRun(ctx, brokers, cl, opts, i+1, spec)
		if err != nil {
			return rep, fmt.Errorf("bench failover: run %d (%s): %w", i+1, spec, err)
		}
		*runs[i] = run
	}
	rep.Ratio = float64(rep.NoStandby.Recovery.Max) / float64(rep.Standby.Recovery.Max)
	fmt.Fprintln(w, "summary:")
	for _, r := range runs {
		fmt.Fprintf(w, "  %-40s  detection max %6d ms  recovery median %6d ms  max %6d ms   downtime median %6d ms  max %6d ms   stayed gap max %6d ms (quiet %d ms)   restored %d\n",
			r.FailoverSpec, ms(r.Detection.Max), ms(r.Recovery.Median), ms(r.Recovery.Max), ms(r.Downtime.Median), ms(r.Downtime.Max), ms(r.StayedGap), ms(r.QuietGap), r.Restored)
	}
	fmt.Fprintf(w, "RESULT failover ratio=%.2f standby_recovery_max_ms=%d nostandby_recovery_max_ms=%d standby_downtime_max_ms=%d "+
		"stayed_gap_max_ms=%d eager_stayed_gap_max_ms=%d detection_max_ms=%d session_timeout_ms=%d eos_reader_stall_ms=%d quiet_gap_max_ms=%d\n",
		rep.Ratio, ms(rep.Standby.Recovery.Max), ms(rep.NoStandby.Recovery.Max), ms(rep.Standby.Downtime.Max),
		ms(rep.Standby.StayedGap), ms(rep.Eager.StayedGap), ms(rep.Standby.Detection.Max), opts.SessionTimeout.Milliseconds(),
		ms(rep.ExactlyOnce.ReaderStall), ms(rep.Standby.QuietGap))
	return rep, nil
}

func standbyLabel(standbys int) string {
	switch standbys {
	case 0:
		return "no standby"
	case 1:
		return "1 standby"
	}
	return fmt.Sprintf("%d standbys", standbys)
}

// ms rounds d to whole milliseconds.
func ms(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }

// failoverRuns numbers failover runs for their application ids.
var failoverRuns atomic.Int64

// failoverRun is run number n of RunFailover, as spec says.
func failoverRun(ctx context.Context, brokers []string, cl *kgo.Client, opts FailoverOptions, n int, spec FailoverSpec) (run FailoverRun, err error) {
	w := opts.Out
	adm := kadm.NewClient(cl)
	standbys := spec.Standbys
	label := "standby"
	if standbys == 0 {
		label = "nostandby"
	}
	run.FailoverSpec = spec
	run.ApplicationID = fmt.Sprintf("bench-failover-%s-%s-%d", label, spec.Protocol, failoverRuns.Add(1))
	in, out := fmt.Sprintf("%s-%d", FailoverInputTopic, n), fmt.Sprintf("%s-%d", FailoverOutputTopic, n)
	changelog := run.ApplicationID + "-" + FailoverStore + "-changelog"
	fmt.Fprintf(w, "run %d: %s (application %s)\n", n, spec, run.ApplicationID)
	runStart := time.Now()
	since := func() string { return fmt.Sprintf("[%6.1fs]", time.Since(runStart).Seconds()) }

	// Whatever topics the run creates are deleted after it, so the next
	// starts with an empty broker.
	before, err := topicNames(ctx, cl)
	if err != nil {
		return run, err
	}
	defer func() {
		if derr := deleteTopicsSince(context.WithoutCancel(ctx), cl, adm, before); derr != nil && err == nil {
			err = derr
		}
	}()

	if err := EnsureTopic(ctx, adm, in, opts.Partitions); err != nil {
		return run, err
	}
	if err := EnsureTopic(ctx, adm, out, opts.Partitions); err != nil {
		return run, err
	}
	gaps := newGapWatch(in, opts.Partitions)
	bld := streams.NewBuilder()
	bld.Stream([]string{in}, streams.WithSerdes(streams.String, streams.Bytes)).
		Peek(gaps.note).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: FailoverStore, CachingDisabled: true})).
		To(out, streams.WithSerdes(streams.String, streams.Int64))
	topo, err := bld.Build()
	if err != nil {
		return run, err
	}
	stateDir, err := os.MkdirTemp("", "braid-bench-failover-")
	if err != nil {
		return run, err
	}
	defer func() {
		if rerr := os.RemoveAll(stateDir); rerr != nil && err == nil {
			err = rerr
		}
	}()
	watch := &failoverWatch{}
	sup, err := streams.NewSupervisor(topo, streams.SupervisorConfig{
		Config: streams.Config{
			ApplicationID:       run.ApplicationID,
			Brokers:             brokers,
			StateDir:            stateDir,
			CommitInterval:      opts.CommitInterval,
			SessionTimeout:      opts.SessionTimeout,
			StandbyReplicas:     standbys,
			RebalanceProtocol:   spec.Protocol,
			ProcessingGuarantee: spec.Guarantee,
			// Zero takes the App's default.
			AcceptableRecoveryLag: opts.AcceptableRecoveryLag,
			// No ClientOptions(): those match the App's clients to the
			// hand-written baselines of the throughput benchmarks; a
			// failover is measured with the App's own tuning.
			Hooks:  []streams.Hook{watch},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
		Instances: opts.Instances,
	})
	if err != nil {
		return run, err
	}

	// The instances start on the empty input and settle before any
	// record arrives, so that no task moves while the backlog is
	// processed: a task's state is then on its active instance and its
	// standbys only, and without standbys its new owner after the crash
	// has none of it.
	fmt.Fprintf(w, "  %s starting %d instances on the empty input\n", since(), opts.Instances)
	supCtx, cancel := context.WithCancel(ctx)
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Run(supCtx) }()
	defer func() {
		cancel()
		if serr := <-supDone; serr != nil && err == nil {
			err = fmt.Errorf("supervisor: %w", serr)
		}
	}()
	lagLimit := int64(max(100, opts.Rate/opts.Partitions/4)) // a quarter second of a partition's input
	var why string
	settle := func() error {
		return waitUntil(ctx, opts.SetupTimeout, 50*time.Millisecond, func() (bool, error) {
			if err := failedInstance(sup); err != nil {
				return false, err
			}
			why = settled(sup.Instances(), opts.Partitions, standbys, lagLimit)
			return why == "", nil
		})
	}
	if err := settle(); err != nil {
		return run, fmt.Errorf("waiting for the group to settle (%s): %w", why, err)
	}
	generations := watch.assignments()

	fmt.Fprintf(w, "  %s settled; starting steady input at %d rec/s and seeding %d records over %d keys to %s\n",
		since(), opts.Rate, opts.Records, opts.Keys, in)
	input := startSteadyInput(ctx, brokers, in, opts.Rate, opts.Keys)
	defer func() {
		produced, perr := input.stop()
		run.Produced = produced
		if perr != nil && err == nil {
			err = fmt.Errorf("steady input: %w", perr)
		}
	}()
	if err := Seed(ctx, brokers, in, opts.Partitions, opts.Records, opts.Keys); err != nil {
		return run, err
	}
	seeded, err := adm.ListEndOffsets(ctx, in)
	if err == nil {
		err = seeded.Error()
	}
	if err != nil {
		return run, fmt.Errorf("listing end offsets of %s: %w", in, err)
	}
	var seededTotal int64
	seeded.Each(func(o kadm.ListedOffset) { seededTotal += o.Offset })
	if seededTotal < int64(opts.Records) {
		return run, fmt.Errorf("input topic %s holds %d records after seeding, want at least %d", in, seededTotal, opts.Records)
	}
	fmt.Fprintf(w, "  %s seeded; waiting for the backlog of %d records (%d steady ones included) to be processed\n",
		since(), seededTotal, seededTotal-int64(opts.Records))

	// The seeded backlog: the group's committed offsets reach the
	// seeded end of every partition.
	var committed int64
	err = waitUntil(ctx, opts.SetupTimeout, 100*time.Millisecond, func() (bool, error) {
		if err := failedInstance(sup); err != nil {
			return false, err
		}
		offs, err := adm.FetchOffsets(ctx, run.ApplicationID)
		if err != nil {
			return false, nil // the group may not exist yet
		}
		done := true
		committed = 0
		seeded.Each(func(o kadm.ListedOffset) {
			c, ok := offs.Lookup(in, o.Partition)
			if !ok || c.At < o.Offset {
				done = false
			}
			if ok {
				committed += min(c.At, o.Offset)
			}
		})
		return done, nil
	})
	if err != nil {
		return run, fmt.Errorf("waiting for the backlog to be processed (%d of %d committed): %w", committed, seededTotal, err)
	}
	fmt.Fprintf(w, "  %s backlog processed and committed\n", since())

	// Still every task active once and restored; with standbys, each
	// task's standbys caught up.
	if err := settle(); err != nil {
		return run, fmt.Errorf("waiting for the standbys to catch up (%s): %w", why, err)
	}
	if n := watch.assignments(); n != generations {
		fmt.Fprintf(w, "  note: tasks were assigned %d times while the backlog was processed; a moved task's new owner may hold some of its state\n", n-generations)
	}
	var maxLag int64 = -1
	for _, info := range sup.Instances() {
		for _, sb := range info.Stats.Standbys {
			for _, st := range sb.Stores {
				maxLag = max(maxLag, st.Lag)
			}
		}
	}
	if standbys > 0 {
		fmt.Fprintf(w, "  %s settled: every task active once, standbys caught up (largest standby lag %d records)\n", since(), maxLag)
	} else {
		fmt.Fprintf(w, "  %s settled: every task active once\n", since())
	}

	if run.Changelog, err = topicRecords(ctx, adm, changelog); err != nil {
		return run, err
	}
	if run.Changelog < int64(opts.Records) {
		return run, fmt.Errorf("changelog %s holds %d records before the crash, want at least %d", changelog, run.Changelog, opts.Records)
	}
	ends, err := adm.ListEndOffsets(ctx, changelog)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return run, fmt.Errorf("listing end offsets of %s: %w", changelog, err)
	}
	for _, info := range sup.Instances() {
		if info.ID == FailoverVictim {
			for _, ts := range info.Stats.Tasks {
				run.Moved = append(run.Moved, ts.ID)
			}
		}
	}
	if len(run.Moved) == 0 {
		return run, fmt.Errorf("%s runs no task", FailoverVictim)
	}
	for p := range opts.Partitions {
		if id := (streams.TaskID{Partition: int32(p)}); !slices.Contains(run.Moved, id) {
			run.Stayed = append(run.Stayed, id)
		}
	}
	if err := run.measureQuiet(ctx, gaps); err != nil {
		return run, err
	}
	var reader *readerWatch
	if spec.Guarantee == streams.ExactlyOnce {
		if reader, err = startReaderWatch(ctx, brokers, out); err != nil {
			return run, err
		}
		defer reader.stop()
	}
	fmt.Fprintf(w, "  %s changelog %s holds %d records; crashing %s, which runs tasks %s\n",
		since(), changelog, run.Changelog, FailoverVictim, taskList(run.Moved))
	crashAt := time.Now()
	gaps.start(crashAt)
	if reader != nil {
		reader.mark(crashAt)
	}
	if err := sup.Crash(FailoverVictim); err != nil {
		return run, err
	}
	got := map[streams.TaskID]streams.FailoverEvent{}
	err = waitUntil(ctx, opts.Timeout, 20*time.Millisecond, func() (bool, error) {
		got = watch.failovers(run.Moved)
		return len(got) == len(run.Moved), nil
	})
	if err != nil {
		var missing []streams.TaskID
		for _, id := range run.Moved {
			if _, ok := got[id]; !ok {
				missing = append(missing, id)
			}
		}
		return run, fmt.Errorf("no failover event within %v of crashing %s for tasks %s (of %s): %w",
			opts.Timeout, FailoverVictim, taskList(missing), taskList(run.Moved), err)
	}
	fmt.Fprintf(w, "  %s every moved task resumed, %.1fs after the crash\n", since(), time.Since(crashAt).Seconds())
	if err := run.measureAfter(ctx, opts, got, gaps, reader, func() map[streams.TaskID]bool { return watch.movedSince(crashAt) }); err != nil {
		return run, err
	}

	var det, rec, down []time.Duration
	for _, id := range run.Moved {
		ev := got[id]
		ft := FailoverTask{FailoverEvent: ev}
		end, _ := ends.Lookup(changelog, id.Partition)
		ft.Changelog = end.Offset
		ready := ev.AssignedAt
		if at, ok := watch.assignedAt(ev.To, id, crashAt); ok {
			ft.Assign = at.Sub(ev.AssignedAt)
			ready = at
		}
		if endAt, ok := watch.restoreEnd(ev.To, id, crashAt); ok && endAt.After(ready) {
			ft.Restore = endAt.Sub(ready)
			ready = endAt
		}
		ft.FirstBatch = ev.ResumedAt.Sub(ready)
		run.Tasks = append(run.Tasks, ft)
		det, rec, down = append(det, ev.Detection), append(rec, ev.Recovery), append(down, ev.Downtime)
		run.Restored += ev.Restored
	}
	run.Detection, run.Recovery, run.Downtime = spreadOf(det), spreadOf(rec), spreadOf(down)
	printFailoverRun(w, run)
	return run, nil
}

// printFailoverRun writes a run's table of moved tasks and its medians
// and maxima.
func printFailoverRun(w io.Writer, run FailoverRun) {
	moves := make([]string, len(run.Tasks))
	width := len("from -> to")
	for i, ft := range run.Tasks {
		moves[i] = ft.From + " -> " + ft.To
		width = max(width, len(moves[i]))
	}
	fmt.Fprintf(w, "  %-5s  %-*s  %-7s  %9s  %8s  %8s  %8s  %8s  %8s  %8s  %9s  %7s\n",
		"task", width, "from -> to", "replica", "detection", "recovery", "=assign", "+restore", "+batch", "downtime",
		"restored", "changelog", "standby")
	fmt.Fprintf(w, "  %-5s  %-*s  %-7s  %9s  %8s  %8s  %8s  %8s  %8s  %8s  %9s  %7s\n",
		"", width, "", "", "ms", "ms", "ms", "ms", "ms", "ms", "records", "records", "lag")
	for i, ft := range run.Tasks {
		replica := ft.FromReplica
		if replica == "" {
			replica = "none"
		}
		lag := "-"
		if ft.StandbyLag >= 0 {
			lag = fmt.Sprint(ft.StandbyLag)
		}
		fmt.Fprintf(w, "  %-5s  %-*s  %-7s  %9d  %8d  %8d  %8d  %8d  %8d  %8d  %9d  %7s\n",
			ft.Task, width, moves[i], replica, ms(ft.Detection), ms(ft.Recovery), ms(ft.Assign), ms(ft.Restore), ms(ft.FirstBatch),
			ms(ft.Downtime), ft.Restored, ft.Changelog, lag)
	}
	fmt.Fprintf(w, "  %s: detection median %d ms, max %d ms; recovery median %d ms, max %d ms; downtime median %d ms, max %d ms; %d records restored in total\n",
		run.FailoverSpec, ms(run.Detection.Median), ms(run.Detection.Max), ms(run.Recovery.Median), ms(run.Recovery.Max),
		ms(run.Downtime.Median), ms(run.Downtime.Max), run.Restored)
	fmt.Fprintf(w, "  tasks that stayed (%s): longest gap between two processed records %d ms, from the crash to %v after the last moved task resumed (%d ms in the %v before the crash)\n",
		taskList(run.Stayed), ms(run.StayedGap), stayedWindow, ms(run.QuietGap), quietWindow)
	if len(run.Traded) > 0 {
		fmt.Fprintf(w, "  tasks moved from one survivor to another (%s): longest gap %d ms\n", taskList(run.Traded), ms(run.TradedGap))
	}
	if run.Guarantee == streams.ExactlyOnce {
		fmt.Fprintf(w, "  a read-committed reader of the sink received the first result of a record produced after the crash, on every partition %s wrote to, %d ms after it\n",
			FailoverVictim, ms(run.ReaderStall))
	}
}

func taskList(ids []streams.TaskID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, " ")
}

// waitUntil calls done every interval until it reports true or an error,
// ctx ends, or timeout passes.
func waitUntil(ctx context.Context, timeout, interval time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// failedInstance returns an error naming an instance whose App failed.
func failedInstance(sup *streams.Supervisor) error {
	for _, info := range sup.Instances() {
		if info.State == streams.InstanceFailed {
			return fmt.Errorf("instance %s failed: %w", info.ID, info.Err)
		}
	}
	return nil
}

// settled returns "" when every one of the partitions tasks is active on
// exactly one running instance, restored, and has standbys standby
// replicas (fewer when there are too few other instances), none of them
// lagging more than lagLimit records, and no warm-up replica is placed;
// else what is not so yet.
func settled(infos []streams.InstanceInfo, partitions, standbys int, lagLimit int64) string {
	active, replicas := map[streams.TaskID]int{}, map[streams.TaskID]int{}
	running := 0
	for _, in := range infos {
		if in.State != streams.InstanceRunning {
			continue
		}
		running++
		if in.Stats.State != streams.Running {
			return fmt.Sprintf("%s is %v", in.ID, in.Stats.State)
		}
		for _, ts := range in.Stats.Tasks {
			if ts.Restoring {
				return fmt.Sprintf("task %s restoring on %s", ts.ID, in.ID)
			}
			active[ts.ID]++
		}
		for _, sb := range in.Stats.Standbys {
			if sb.Warmup {
				return fmt.Sprintf("a warm-up replica of task %s on %s", sb.ID, in.ID)
			}
			replicas[sb.ID]++
			for _, st := range sb.Stores {
				if st.Lag > lagLimit {
					return fmt.Sprintf("the standby of task %s on %s lags %d records", sb.ID, in.ID, st.Lag)
				}
			}
		}
	}
	if len(active) != partitions {
		return fmt.Sprintf("%d of %d tasks active", len(active), partitions)
	}
	want := min(standbys, running-1)
	for id, n := range active {
		if n != 1 {
			return fmt.Sprintf("task %s active on %d instances", id, n)
		}
		if replicas[id] != want {
			return fmt.Sprintf("task %s has %d standbys, want %d", id, replicas[id], want)
		}
	}
	return ""
}

// failoverWatch is the hook of a failover run: it keeps the failover
// events, the task assignments and the ends of restores, each with when
// its hook was called.
type failoverWatch struct {
	mu       sync.Mutex
	events   []streams.FailoverEvent
	restores []restoreEnded
	assigned []taskAssigned
}

type taskAssigned struct {
	at time.Time
	ev streams.TaskEvent
}

func (f *failoverWatch) OnTaskAssigned(ev streams.TaskEvent) {
	at := time.Now()
	f.mu.Lock()
	f.assigned = append(f.assigned, taskAssigned{at, ev})
	f.mu.Unlock()
}

// assignments returns how many times a task started on an instance.
func (f *failoverWatch) assignments() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.assigned)
}

// movedSince returns the tasks some instance reported assigned after
// since.
func (f *failoverWatch) movedSince(since time.Time) map[streams.TaskID]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	moved := make(map[streams.TaskID]bool)
	for _, a := range f.assigned {
		if a.at.After(since) {
			moved[a.ev.Task] = true
		}
	}
	return moved
}

// assignedAt returns when instance first reported task assigned after
// since.
func (f *failoverWatch) assignedAt(instance string, task streams.TaskID, since time.Time) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.assigned {
		if a.ev.InstanceID == instance && a.ev.Task == task && a.at.After(since) {
			return a.at, true
		}
	}
	return time.Time{}, false
}

type restoreEnded struct {
	at time.Time
	ev streams.RestoreEvent
}

func (f *failoverWatch) OnTaskFailedOver(ev streams.FailoverEvent) {
	f.mu.Lock()
	f.events = append(f.events, ev)
	f.mu.Unlock()
}

func (f *failoverWatch) OnRestoreStart(streams.RestoreEvent)    {}
func (f *failoverWatch) OnRestoreProgress(streams.RestoreEvent) {}
func (f *failoverWatch) OnRestoreEnd(ev streams.RestoreEvent) {
	at := time.Now()
	f.mu.Lock()
	f.restores = append(f.restores, restoreEnded{at, ev})
	f.mu.Unlock()
}

// failovers returns the last failover event of each of tasks reported.
func (f *failoverWatch) failovers(tasks []streams.TaskID) map[streams.TaskID]streams.FailoverEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[streams.TaskID]streams.FailoverEvent)
	for _, ev := range f.events {
		if slices.Contains(tasks, ev.Task) {
			out[ev.Task] = ev
		}
	}
	return out
}

// restoreEnd returns when the last restore of task's stores on instance
// that ended after since ended.
func (f *failoverWatch) restoreEnd(instance string, task streams.TaskID, since time.Time) (end time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.restores {
		if r.ev.InstanceID == instance && r.ev.Task == task && r.at.After(since) && r.at.After(end) {
			end, ok = r.at, true
		}
	}
	return end, ok
}

// steadyInput produces records to a topic at a steady rate until stopped.
type steadyInput struct {
	stopping chan struct{}
	done     chan struct{}
	produced atomic.Int64
	errs     firstError
}

// startSteadyInput produces rate records per second to topic, keys
// cycling over keys distinct keys and values as Seed's, with timestamps of
// now, until stop is called or ctx ends.
func startSteadyInput(ctx context.Context, brokers []string, topic string, rate, keys int) *steadyInput {
	s := &steadyInput{stopping: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			s.errs.promise(nil, err)
			return
		}
		defer cl.Close()
		keyBytes := make([][]byte, keys)
		for i := range keyBytes {
			keyBytes[i] = Key(i, keys)
		}
		start := time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var i int
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stopping:
				if err := cl.Flush(ctx); err != nil {
					s.errs.promise(nil, err)
				}
				return
			case now := <-tick.C:
				due := int(now.Sub(start).Seconds() * float64(rate))
				for ; i < due; i++ {
					v := appendValue(make([]byte, 0, ValueBytes), i, keyBytes[i%keys], now.UnixMilli())
					cl.Produce(ctx, &kgo.Record{Key: keyBytes[i%keys], Value: v, Timestamp: now}, s.errs.promise)
				}
				s.produced.Store(int64(i))
			}
		}
	}()
	return s
}

// stop stops the input, flushing what it buffered, and returns how many
// records it produced and its first produce error.
func (s *steadyInput) stop() (int64, error) {
	close(s.stopping)
	<-s.done
	return s.produced.Load(), s.errs.get()
}

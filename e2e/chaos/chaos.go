// Package chaos owns Braid's chaos test of its processing guarantees, run
// with real processes: the `braid broker` binary, three worker processes
// of one application (see the worker command and Topology) that are
// killed with SIGKILL at random and restarted under the same instance id,
// and a producer writing inputs whose every output is known in advance.
// When the group has committed every input, Run stops the workers, reads
// each output topic with a read-committed consumer and checks it against
// that truth: under exactly-once nothing may be missing, repeated or
// miscounted; under at-least-once nothing may be missing, and repeats are
// counted.
//
// It owns the broker faults too (RunFault): the broker killed and
// restarted, stopped, or cut off at a fault Proxy that it advertises,
// under two workers whose every commit is logged, each of which must
// commit again within MaxResume of the broker's return.
//
// The short runs are e2e tests (TestChaosExactlyOnce,
// TestChaosAtLeastOnce, TestBrokerKillRestartExactlyOnce,
// TestBrokerCutAtLeastOnce); the long ones are `make chaos`, the driver
// command.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppID is the chaos application's id: its group and its internal topics'
// prefix.
const AppID = "chaos"

// Options configure a run. Braid and Worker are required; every other zero
// field means its default.
type Options struct {
	// Braid is the built braid binary (it runs the broker); Worker the
	// built worker command (see Build). Braid is not needed on Kafka.
	Braid, Worker string

	// Kafka, when set, is the Apache Kafka cluster (a brokertest.Kafka of
	// three nodes, say) the run uses instead of a `braid broker` of its
	// own. It is cleared of every topic and group before the run, and the
	// topics the run creates are replicated as Braid's own are
	// (streams.ReplicationFor): on three nodes or more, factor 3 with
	// min.insync.replicas=2. Its broker faults are the Kafka ones (see
	// KafkaFaults).
	Kafka *brokertest.Kafka

	// Guarantee is the workers' processing guarantee.
	Guarantee streams.Guarantee

	// Records inputs (default 3,000) over Keys keys (default 50) are
	// produced at a steady rate over Duration (default 20 s).
	Records  int
	Keys     int
	Duration time.Duration

	// Partitions of chaos-in and the output topics (default 6).
	Partitions int

	// Workers is the number of worker processes (default 3); Standbys
	// their standby replicas of each task (default 1, negative for none).
	Workers  int
	Standbys int

	// Kills is how many times a random worker is killed with SIGKILL,
	// spread over Duration; a killed worker is restarted after a random
	// delay of up to RestartDelay (default 2 s). Duration/Kills must be at
	// least 3 s, so that tasks get to move between kills.
	Kills        int
	RestartDelay time.Duration

	// Seed seeds the choice of keys, kill times, victims and delays;
	// 0 picks one. The report gives the seed used.
	Seed uint64

	// CommitInterval of the workers; 0 leaves the runtime's default for
	// the guarantee. SessionTimeout of the workers (default 3 s): how
	// long a killed worker goes unnoticed unless its restart is faster.
	CommitInterval time.Duration
	SessionTimeout time.Duration

	// CompletionTimeout bounds the wait, after the last input, for the
	// group to commit every input (default 2 minutes).
	CompletionTimeout time.Duration

	// Dir holds the broker's data, the workers' state and every log (in
	// Dir/logs). Empty: a new temporary directory, removed at the end
	// unless KeepDir is set. A given Dir is never removed.
	Dir     string
	KeepDir bool

	// Progress receives a line for every step and kill, and a status
	// line every few seconds. Default: discarded.
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Records, 3000)
	def(&o.Keys, 50)
	def(&o.Partitions, 6)
	def(&o.Workers, 3)
	def(&o.Standbys, 1)
	o.Standbys = max(o.Standbys, 0)
	for _, d := range []struct {
		v *time.Duration
		d time.Duration
	}{{&o.Duration, 20 * time.Second}, {&o.RestartDelay, 2 * time.Second}, {&o.SessionTimeout, 3 * time.Second}, {&o.CompletionTimeout, 2 * time.Minute}} {
		if *d.v == 0 {
			*d.v = d.d
		}
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	switch {
	case (o.Braid == "" && o.Kafka == nil) || o.Worker == "":
		return o, errors.New("chaos: Options.Braid (without Kafka) and Options.Worker are required")
	case o.Records < 0 || o.Keys < 0 || o.Partitions < 0 || o.Workers < 0 || o.Kills < 0:
		return o, errors.New("chaos: negative Records, Keys, Partitions, Workers or Kills")
	case o.Duration < 0 || o.RestartDelay < 0 || o.CommitInterval < 0 || o.SessionTimeout < 0 || o.CompletionTimeout < 0:
		return o, errors.New("chaos: a negative duration")
	case o.Kills > 0 && o.Duration/time.Duration(o.Kills) < 3*time.Second:
		return o, fmt.Errorf("chaos: %d kills in %v are less than 3 s apart", o.Kills, o.Duration)
	}
	return o, nil
}

// Report is what a run found. Duplicates, Lost and WrongCounts count the
// problems (see Problem); Examples keeps the first few of each kind per
// topic.
type Report struct {
	Guarantee   streams.Guarantee
	Seed        uint64
	Kills       int
	Inputs      int
	Duplicates  int
	Lost        int
	WrongCounts int
	Elapsed     time.Duration
	Examples    []Problem

	// Read counts the records read from each output topic, Aborted the
	// records of aborted transactions the read skipped: proof that kills
	// hit open transactions.
	Read, Aborted map[string]int
	// Unstable lists the output partitions whose last stable offset was
	// behind their end once the workers had stopped: a transaction left
	// open, which hides what follows it from read-committed readers.
	Unstable []string
	// Dir is the run's directory, with its logs in Dir/logs; it is gone
	// after Run unless Options.Dir or KeepDir was set.
	Dir string
}

// ResultLine is the run's one-line result, as `make chaos` prints it.
func (r Report) ResultLine() string {
	name := "chaos"
	if r.Guarantee != streams.ExactlyOnce {
		name = "chaos-at-least-once"
	}
	return fmt.Sprintf("RESULT %s kills=%d inputs=%d duplicates=%d lost=%d wrong_counts=%d",
		name, r.Kills, r.Inputs, r.Duplicates, r.Lost, r.WrongCounts)
}

// Err returns an error describing the report when the guarantee did not
// hold: under exactly-once any problem, or a transaction left open; under
// at-least-once a loss or a wrong count (which there means an output no
// replay explains).
func (r Report) Err() error {
	bad := r.Lost > 0 || r.WrongCounts > 0 || (r.Guarantee == streams.ExactlyOnce && (r.Duplicates > 0 || len(r.Unstable) > 0))
	if !bad {
		return nil
	}
	return fmt.Errorf("%s does not hold (seed %d): %d duplicates, %d lost, %d wrong counts, %d partitions with an open transaction\n%s",
		r.Guarantee, r.Seed, r.Duplicates, r.Lost, r.WrongCounts, len(r.Unstable), r.Details())
}

// Details lists the examples and the unstable partitions, one a line.
func (r Report) Details() string {
	var b strings.Builder
	for _, p := range r.Examples {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	for _, u := range r.Unstable {
		fmt.Fprintf(&b, "  open transaction after the workers stopped: %s\n", u)
	}
	return b.String()
}

// Run runs the chaos test as o says and checks the outputs. It returns an
// error when the run itself fails (a process that would not start or
// stop, a worker that exited by itself, inputs not committed in time); a
// run that completes returns its report and a nil error, and the report's
// Err says whether the guarantee held. Every process Run starts is
// stopped and waited for before it returns.
func Run(ctx context.Context, o Options) (rep Report, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return rep, err
	}
	began := time.Now()
	rep = Report{Guarantee: o.Guarantee, Seed: o.Seed}
	defer func() { rep.Elapsed = time.Since(began) }()
	var logs string
	var cleanup func()
	if rep.Dir, logs, cleanup, err = runDir(o, "braid-chaos-"); err != nil {
		return rep, err
	}
	defer cleanup()
	say := func(format string, args ...any) {
		fmt.Fprintf(o.Progress, "chaos %s %6.1fs  %s\n", o.Guarantee, time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	say("seed %d, %d inputs over %d keys in %v, %d kills, %d workers, logs in %s", o.Seed, o.Records, o.Keys, o.Duration, o.Kills, o.Workers, logs)

	var brokers []string
	var brk *broker // nil on Kafka
	if o.Kafka != nil {
		if brokers, err = clearKafka(o.Kafka, say); err != nil {
			return rep, err
		}
	} else {
		if brk, err = startBroker(ctx, o.Braid, "", filepath.Join(rep.Dir, "broker"), filepath.Join(logs, "broker.log"), o.Partitions); err != nil {
			return rep, err
		}
		defer func() {
			if serr := brk.stop(30 * time.Second); serr != nil && err == nil {
				err = fmt.Errorf("stopping broker: %w", serr)
			}
		}()
		say("broker listening on %s", brk.addr)
		brokers = []string{brk.addr}
	}
	cl, err := connect(ctx, brokers, o.Partitions)
	if err != nil {
		return rep, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	ws := newWorkers(o, strings.Join(brokers, ","), rep.Dir, logs, false)
	defer ws.stop(10 * time.Second) // a no-op once the workers were stopped
	if err := ws.startAll(); err != nil {
		return rep, err
	}
	say("started %d workers", o.Workers)

	var kills atomic.Int64
	tr, err := produceDuring(ctx, cl, adm, ws, o, say, func(ctx context.Context) error {
		return killWorkers(ctx, ws, o, rand.New(rand.NewPCG(o.Seed, 2)), &kills, say)
	})
	rep.Kills = int(kills.Load())
	if err != nil {
		return rep, err
	}
	rep.Inputs = tr.inputs
	stuck := func() string { return stuckReport(ctx, adm, ws, brk) }
	if err := waitCommitted(ctx, adm, ws, o.CompletionTimeout, say, stuck); err != nil {
		return rep, err
	}
	say("the group committed every input; stopping the workers")
	if err := ws.stop(30 * time.Second); err != nil {
		return rep, fmt.Errorf("chaos: %w", err)
	}

	if err := checkOutputs(ctx, brokers, o.Guarantee, tr, &rep); err != nil {
		return rep, err
	}
	say("read %d mapped, %d counts, %d window results (aborted records skipped: %d, %d, %d): %s",
		rep.Read[MappedTopic], rep.Read[CountsTopic], rep.Read[WindowsTopic],
		rep.Aborted[MappedTopic], rep.Aborted[CountsTopic], rep.Aborted[WindowsTopic], rep.ResultLine())
	if d := rep.Details(); d != "" {
		say("first problems:\n%s", strings.TrimRight(d, "\n"))
	}
	return rep, nil
}

// checkOutputs reads the output topics read committed and checks them
// against tr, counting the problems in rep.
func checkOutputs(ctx context.Context, brokers []string, g streams.Guarantee, tr truth, rep *Report) error {
	out, err := readTopics(ctx, brokers, outputTopics, time.Minute)
	if err != nil {
		return fmt.Errorf("reading outputs: %w", err)
	}
	rep.Unstable, rep.Aborted = out.unstable, out.aborted
	rep.Read = make(map[string]int)
	c := &checker{exactly: g == streams.ExactlyOnce, tr: tr, rep: rep, kept: make(map[[2]string]int)}
	c.checkMapped(out.records[MappedTopic])
	c.checkCounts(out.records[CountsTopic])
	c.checkWindows(out.records[WindowsTopic])
	for _, t := range outputTopics {
		rep.Read[t] = len(out.records[t])
	}
	return nil
}

// runDir returns the directory of a run and its logs folder, made: o.Dir,
// or a new temporary one that cleanup removes unless o.KeepDir.
func runDir(o Options, prefix string) (dir, logs string, cleanup func(), err error) {
	dir, cleanup = o.Dir, func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", prefix); err != nil {
			return "", "", cleanup, fmt.Errorf("chaos: %w", err)
		}
		if !o.KeepDir {
			cleanup = func() { os.RemoveAll(dir) }
		}
	}
	logs = filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		cleanup()
		return "", "", func() {}, fmt.Errorf("chaos: %w", err)
	}
	return dir, logs, cleanup, nil
}

// connect returns the producer's client of brokers, once it has created
// the chaos topics with partitions each, replicated as Braid replicates
// the topics it creates.
func connect(ctx context.Context, brokers []string, partitions int) (*kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(keyPartitioner))
	if err != nil {
		return nil, fmt.Errorf("chaos: creating client: %w", err)
	}
	if err := createTopics(ctx, cl, partitions); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

func createTopics(ctx context.Context, cl *kgo.Client, partitions int) error {
	adm := kadm.NewClient(cl)
	repl, err := streams.ReplicationFor(ctx, adm, 0)
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	resp, err := repl.CreateTopics(ctx, adm, int32(partitions), nil, append([]string{InputTopic}, outputTopics...)...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	return waitTopicsEverywhere(ctx, cl, partitions, append([]string{InputTopic}, outputTopics...))
}

// waitTopicsEverywhere waits until every broker's metadata has topics,
// with partitions partitions each and a leader for each: on Kafka a
// broker learns of a new topic a moment after the controller created it,
// and a worker asking that broker would find its source topic missing.
func waitTopicsEverywhere(ctx context.Context, cl *kgo.Client, partitions int, topics []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		missing, err := topicsMissing(ctx, cl, partitions, topics)
		if err == nil && missing == "" {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for every broker to know topics %v: %w (%s, %v)", topics, ctx.Err(), missing, err)
		}
		_ = sleepCtx(ctx, 100*time.Millisecond)
	}
}

// topicsMissing asks each broker for the topics' metadata and says which
// broker lacks one, or a leader of one, if any does.
func topicsMissing(ctx context.Context, cl *kgo.Client, partitions int, topics []string) (string, error) {
	brokers, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", err
	}
	for _, b := range brokers.Brokers {
		req := kmsg.NewPtrMetadataRequest()
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
		if err != nil {
			return "", err
		}
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 || len(t.Partitions) != partitions {
				return fmt.Sprintf("broker %d does not know %s", b.NodeID, *t.Topic), nil
			}
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					return fmt.Sprintf("broker %d knows no leader of %s/%d", b.NodeID, *t.Topic, p.Partition), nil
				}
			}
		}
	}
	return "", nil
}

// produceDuring produces the inputs while act runs (it kills workers,
// or the broker), and returns the truth once both are done. A worker that
// exits by itself, a failed produce or an error of act ends both early.
func produceDuring(ctx context.Context, cl *kgo.Client, adm *kadm.Client, ws *workers, o Options, say func(string, ...any), act func(context.Context) error) (truth, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg                sync.WaitGroup
		tr                truth
		prodErr, actErr   error
		produced          atomic.Int64
		producing, acting = make(chan struct{}), make(chan struct{})
	)
	wg.Go(func() {
		defer close(producing)
		tr, prodErr = produce(ctx, cl, o, rand.New(rand.NewPCG(o.Seed, 1)), &produced)
	})
	wg.Go(func() {
		defer close(acting)
		actErr = act(ctx)
	})
	status := time.NewTicker(5 * time.Second)
	defer status.Stop()
	alive := time.NewTicker(250 * time.Millisecond)
	defer alive.Stop()
	// The first error ends the run; the others follow from the cancel.
	var err error
	fail := func(e error) {
		if e != nil && err == nil {
			err = e
			cancel()
		}
	}
	for producing != nil || acting != nil {
		select {
		case <-producing:
			producing = nil
			if prodErr == nil {
				say("produced %d inputs and %d flush records", o.Records, o.Partitions)
			}
			fail(prodErr)
		case <-acting:
			acting = nil
			fail(actErr)
		case <-alive.C:
			fail(ws.checkAlive())
		case <-status.C:
			say("produced %d/%d, %s", produced.Load(), o.Records+o.Partitions, lagText(ctx, adm))
		}
	}
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return tr, err
}

// killWorkers kills a random worker o.Kills times, one in each equal slot
// of o.Duration, at a random moment of its first two thirds, and restarts
// it after a random delay.
func killWorkers(ctx context.Context, ws *workers, o Options, rng *rand.Rand, kills *atomic.Int64, say func(string, ...any)) error {
	if o.Kills == 0 {
		return nil
	}
	began := time.Now()
	slot := o.Duration / time.Duration(o.Kills)
	for k := range o.Kills {
		at := slot*time.Duration(k) + slot/6 + time.Duration(rng.Int64N(int64(slot/2)))
		delay := time.Duration(rng.Int64N(int64(min(o.RestartDelay, slot/3)))) + 100*time.Millisecond
		victim := rng.IntN(o.Workers)
		if err := sleepCtx(ctx, time.Until(began.Add(at))); err != nil {
			return err
		}
		pid, err := ws.kill(victim)
		if err != nil {
			return err
		}
		kills.Add(1)
		say("kill %d/%d: %s (pid %d) with SIGKILL; restarting it in %v", k+1, o.Kills, ws.name(victim), pid, delay.Round(time.Millisecond))
		if err := sleepCtx(ctx, delay); err != nil {
			return err
		}
		if err := ws.start(victim); err != nil {
			return err
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// inputLag returns, per chaos-in partition, how many records the group
// has not committed yet.
func inputLag(ctx context.Context, adm *kadm.Client) (map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, InputTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing end offsets of %s: %w", InputTopic, err)
	}
	committed, err := adm.FetchOffsets(ctx, AppID)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fetching the offsets of group %s: %w", AppID, err)
	}
	lag := make(map[int32]int64)
	ends.Each(func(e kadm.ListedOffset) {
		at := int64(0)
		if c, ok := committed.Lookup(e.Topic, e.Partition); ok && c.At >= 0 {
			at = c.At
		}
		lag[e.Partition] = e.Offset - at
	})
	return lag, nil
}

// lagText says how far the group is behind, or why it cannot: within a
// few seconds, so that a broker that does not answer delays no status.
func lagText(ctx context.Context, adm *kadm.Client) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	lag, err := inputLag(ctx, adm)
	if err != nil {
		return "lag unknown: " + err.Error()
	}
	total := int64(0)
	for _, l := range lag {
		total += l
	}
	return fmt.Sprintf("%d inputs not committed %v", total, lag)
}

// waitCommitted waits until the group has committed every input, failing
// after timeout or when a worker exits. Under exactly-once the offsets
// commit with the outputs in one transaction, so from then on every output
// is there too; a killed worker's open transaction only delays it until
// its restart fences it.
//
// report, if not nil, says at the deadline what the run looked like
// (stuckReport); the error carries it.
func waitCommitted(ctx context.Context, adm *kadm.Client, ws *workers, timeout time.Duration, say func(string, ...any), report func() string) error {
	deadline := time.Now().Add(timeout)
	lastSaid := time.Now()
	for {
		lag, err := inputLag(ctx, adm)
		if err != nil {
			return fmt.Errorf("waiting for the inputs to be committed: %w", err)
		}
		total := int64(0)
		for _, l := range lag {
			total += l
		}
		if total == 0 && len(lag) > 0 {
			return nil
		}
		if err := ws.checkAlive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("waiting for the inputs to be committed: the group %s still had %d inputs to commit %v after the last input (per partition: %v)", AppID, total, timeout, lag)
			if report != nil {
				err = fmt.Errorf("%w\n%s", err, report())
			}
			return err
		}
		if time.Since(lastSaid) >= 5*time.Second {
			say("waiting for the group to commit: %d inputs not committed %v", total, lag)
			lastSaid = time.Now()
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

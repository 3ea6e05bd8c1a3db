package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// PeerFailover is the peer benchmark's failover (RunPeer's workload
// "failover"): two instances of the count with one standby replica, one
// of them crashed.
const PeerFailover = "failover"

// PeerFailoverResult is what the failover of RunPeer measured: the median
// over the rounds of each run's downtime (the longest of its moved
// tasks').
type PeerFailoverResult struct {
	// Braid and KStreams: the crash nobody sees (SIGKILL), detected by
	// the session timeout on both sides.
	Braid, KStreams time.Duration
	// Supervised is Braid's with the crash seen by its Supervisor.
	Supervised     time.Duration
	SessionTimeout time.Duration
	// Ratio is KStreams over Braid; SupervisedRatio KStreams over
	// Supervised (Kafka Streams has no supervised detection).
	Ratio, SupervisedRatio float64
}

// RESULT returns the unseen crash's RESULT line.
func (r PeerFailoverResult) RESULT() string {
	return fmt.Sprintf("RESULT peer-failover ratio=%.3f braid_ms=%d kstreams_ms=%d session_timeout_ms=%d",
		r.Ratio, ms(r.Braid), ms(r.KStreams), r.SessionTimeout.Milliseconds())
}

// SupervisedRESULT returns the supervised crash's RESULT line.
func (r PeerFailoverResult) SupervisedRESULT() string {
	return fmt.Sprintf("RESULT peer-failover-supervised ratio=%.3f braid_ms=%d kstreams_ms=%d session_timeout_ms=%d",
		r.SupervisedRatio, ms(r.Supervised), ms(r.KStreams), r.SessionTimeout.Milliseconds())
}

// newPeerFailoverResult returns the result of the rounds' downtimes.
func newPeerFailoverResult(sessionTimeout time.Duration, braid, kstreams, supervised []time.Duration) PeerFailoverResult {
	r := PeerFailoverResult{Braid: medianDuration(braid), KStreams: medianDuration(kstreams), Supervised: medianDuration(supervised),
		SessionTimeout: sessionTimeout}
	if r.Braid > 0 {
		r.Ratio = float64(r.KStreams) / float64(r.Braid)
	}
	if r.Supervised > 0 {
		r.SupervisedRatio = float64(r.KStreams) / float64(r.Supervised)
	}
	return r
}

// peerFailoverKind is one of the failover's three runs of a round.
type peerFailoverKind struct {
	side       string // braid or kstreams
	supervised bool
}

func (k peerFailoverKind) String() string {
	if k.supervised {
		return k.side + " supervised"
	}
	return k.side + " unseen"
}

// failover measures the failover: opts.Rounds rounds of three runs, whose
// order alternates: Braid and Kafka Streams, each two worker processes of
// the count (its record cache off, so that each input record has its
// output at once and the wait measured is the failover's, not a cache's
// flush) with one standby replica and the same session timeout, one
// SIGKILLed; and Braid's two instances under a Supervisor in one worker,
// one crashed by it (SIGUSR1 to the worker), as `braid bench failover`
// crashes them. Each run has its own input, output, application id and
// state dirs. Once the two instances run every task once each, active
// and standby, steady input at opts.FailoverRate flows for
// opts.FailoverWarm (the standbys keep up with it), then the crash; a
// task's downtime is from the crash to the first record a consumer of
// the output receives on its partition stamped after the crash (the
// steady input stamps records when it produces them; a count's output
// carries its input's timestamp): readerWatch, as `braid bench failover`
// measures the reader's stall, for both sides.
func (p *peerBench) failover(ctx context.Context) (PeerFailoverResult, error) {
	o := p.opts
	fmt.Fprintf(p.opts.Out, "  %-9s two instances, one standby, session timeout %v, commit every %v, cache off, steady input %d rec/s for %v before the crash\n",
		PeerFailover, o.SessionTimeout, o.CommitInterval, o.FailoverRate, o.FailoverWarm)
	kinds := []peerFailoverKind{{side: "braid"}, {side: "kstreams"}, {side: "braid", supervised: true}}
	runs := make([][]time.Duration, len(kinds))
	for round := range o.Rounds {
		for k := range kinds {
			i := k
			if round%2 == 1 {
				i = len(kinds) - 1 - k
			}
			cmd := o.Braid
			if kinds[i].side == "kstreams" {
				cmd = o.KStreams
			}
			moved, waits, err := p.failoverRun(ctx, kinds[i], cmd)
			if err != nil {
				return PeerFailoverResult{}, fmt.Errorf("bench peer: failover, %s, round %d: %w", kinds[i], round+1, err)
			}
			var longest time.Duration
			var each []string
			for j, d := range waits {
				longest = max(longest, d)
				each = append(each, fmt.Sprintf("%d: %d ms", moved[j], ms(d)))
			}
			fmt.Fprintf(p.opts.Out, "  %-9s %-19s round %-2d downtime %6d ms (moved tasks' partitions %s)\n",
				PeerFailover, kinds[i], round+1, ms(longest), strings.Join(each, ", "))
			runs[i] = append(runs[i], longest)
		}
	}
	return newPeerFailoverResult(o.SessionTimeout, runs[0], runs[1], runs[2]), nil
}

// failoverRun runs one failover of kind with command's workers and
// returns the partitions of the moved tasks and each one's downtime.
func (p *peerBench) failoverRun(ctx context.Context, kind peerFailoverKind, command func([]string) *exec.Cmd) ([]int32, []time.Duration, error) {
	o := p.opts
	label := kind.side
	if kind.supervised {
		label += "-supervised"
	}
	appID := fmt.Sprintf("bench-peer-failover-%s-%d", label, p.runs.Add(1))
	in, out := appID+"-in", appID+"-out"
	defer p.deleteRunTopics(context.WithoutCancel(ctx), appID)
	for _, t := range []string{in, out} {
		if err := EnsureTopic(ctx, p.adm, t, o.Partitions); err != nil {
			return nil, nil, err
		}
	}
	args := peerWorkerArgs{workload: PeerCount, bootstrap: strings.Join(p.brokers, ","), appID: appID,
		input: in, output: out, guarantee: "at_least_once", commitIntervalMs: o.CommitInterval.Milliseconds(),
		cacheMaxBytes: 0, threads: 1, sessionTimeoutMs: o.SessionTimeout.Milliseconds(), standbys: 1, instances: 1, reportTasks: true}
	processes := 2
	if kind.supervised {
		args.instances, processes = 2, 1
	}
	var workers []*peerWorker
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	for i := range processes {
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s-%d-", appID, i))
		if err != nil {
			return nil, nil, err
		}
		defer os.RemoveAll(dir)
		a := args
		a.stateDir = dir
		w, err := startPeerWorker(command(a.list()))
		if err != nil {
			return nil, nil, err
		}
		workers = append(workers, w)
	}
	setup, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := awaitPeerTasks(setup, workers, o.Partitions); err != nil {
		return nil, nil, fmt.Errorf("waiting for every task to be active and standby once: %w", err)
	}
	input := startSteadyInput(ctx, p.brokers, in, o.FailoverRate, o.Keys)
	defer input.stop()
	reader, err := startReaderWatch(ctx, p.brokers, out)
	if err != nil {
		return nil, nil, err
	}
	defer reader.stop()
	all := make([]int32, o.Partitions)
	for i := range all {
		all[i] = int32(i)
	}
	// The reader receives results of every partition before the crash:
	// the instances process, and its position is at the end.
	reader.mark(time.Now())
	if err := waitReceived(setup, workers, reader, all); err != nil {
		return nil, nil, fmt.Errorf("waiting for output on every partition before the crash: %w", err)
	}
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-time.After(o.FailoverWarm):
	}
	tasks, err := awaitPeerTasks(setup, workers, o.Partitions)
	if err != nil {
		return nil, nil, fmt.Errorf("the tasks before the crash: %w", err)
	}
	victim, instance := workers[0], "app"
	if kind.supervised {
		instance = peerFailoverVictim
	}
	moved := tasks[peerTaskOwner{0, instance}].Active
	crashAt := time.Now()
	reader.mark(crashAt)
	if kind.supervised {
		err = victim.cmd.Process.Signal(syscall.SIGUSR1)
	} else {
		err = victim.cmd.Process.Kill() // SIGKILL
	}
	if err != nil {
		return nil, nil, fmt.Errorf("crashing %s: %w", instance, err)
	}
	if !kind.supervised {
		victim.stopped = true // killed; nothing to stop
		<-victim.exited
		workers = workers[1:]
	}
	after, cancel2 := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel2()
	if err := waitReceived(after, workers, reader, moved); err != nil {
		return nil, nil, fmt.Errorf("waiting for output on the moved tasks' partitions %v after the crash: %w", moved, err)
	}
	return moved, reader.waits(moved), nil
}

// peerTaskOwner is an instance of a worker.
type peerTaskOwner struct {
	worker   int
	instance string
}

// awaitPeerTasks waits until the workers' last "tasks" events have every
// one of partitions active on one instance and standby on another, and
// each instance active on one at least; it returns them.
func awaitPeerTasks(ctx context.Context, workers []*peerWorker, partitions int) (map[peerTaskOwner]peerTasks, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	why := "no tasks reported"
	for {
		tasks := map[peerTaskOwner]peerTasks{}
		for i, w := range workers {
			w.mu.Lock()
			for id, t := range w.tasks {
				tasks[peerTaskOwner{i, id}] = t
			}
			w.mu.Unlock()
		}
		if why = peerTasksBalanced(tasks, partitions); why == "" {
			return tasks, nil
		}
		if err := peerWorkersFailed(workers); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", why, ctx.Err())
		case <-tick.C:
		}
	}
}

// peerTasksBalanced returns "" when tasks has two instances or more, each
// active on one of partitions at least, and every partition active on
// one and standby on another; else what is not so.
func peerTasksBalanced(tasks map[peerTaskOwner]peerTasks, partitions int) string {
	if len(tasks) < 2 {
		return fmt.Sprintf("%d instances report tasks, want 2", len(tasks))
	}
	active, standby := make([]int, partitions), make([]int, partitions)
	for owner, t := range tasks {
		if len(t.Active) == 0 {
			return fmt.Sprintf("instance %s of worker %d has no active task", owner.instance, owner.worker)
		}
		for _, p := range t.Active {
			if int(p) < partitions {
				active[p]++
			}
		}
		for _, p := range t.Standby {
			if int(p) < partitions {
				standby[p]++
			}
			if slices.Contains(t.Active, p) {
				return fmt.Sprintf("partition %d active and standby on one instance", p)
			}
		}
	}
	for p := range partitions {
		if active[p] != 1 || standby[p] != 1 {
			return fmt.Sprintf("partition %d active on %d instances, standby on %d", p, active[p], standby[p])
		}
	}
	return ""
}

// waitReceived waits until reader received a record on each of
// partitions since its mark, failing if a worker fails first.
func waitReceived(ctx context.Context, workers []*peerWorker, reader *readerWatch, partitions []int32) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !reader.received(partitions) {
		if err := peerWorkersFailed(workers); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// peerWorkersFailed returns an error if one of workers exited.
func peerWorkersFailed(workers []*peerWorker) error {
	for i, w := range workers {
		select {
		case <-w.exited:
			return fmt.Errorf("worker %d exited: %v\n%s", i, w.waitErr, w.stderr.String())
		default:
		}
	}
	return nil
}

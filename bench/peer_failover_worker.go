package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// peerTasks are the partitions of the tasks an instance runs, active and
// standby, sorted.
type peerTasks struct {
	Active  []int32 `json:"active"`
	Standby []int32 `json:"standby"`
}

// peerFailoverVictim is the instance a supervised failover worker crashes
// on SIGUSR1.
const peerFailoverVictim = "instance-1"

// peerFailoverWorker is the Braid worker of the failover (--report-tasks):
// with --instances 1 it runs one App of a's workload until ctx ends (the
// benchmark kills the process with SIGKILL: a crash nobody sees); with
// --instances 2 it runs two under a streams.Supervisor and, on SIGUSR1,
// crashes instance-1 with Supervisor.Crash (no leave, no commit), which
// the Supervisor sees and removes from the group at once, as `braid bench
// failover` crashes its instances; it prints "crashed" then. Either way it
// prints "tasks" with each instance's tasks whenever they change while
// every instance is running.
func peerFailoverWorker(ctx context.Context, a peerWorkerArgs, g streams.Guarantee, ev *peerEvents) error {
	topo, err := peerTopology(a.workload, strings.Split(a.input, ","), a.output)
	if err != nil {
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	// Before the first "tasks": the benchmark sends SIGUSR1 only once it
	// read one.
	crash := make(chan os.Signal, 1)
	if a.instances > 1 {
		signal.Notify(crash, syscall.SIGUSR1)
		defer signal.Stop(crash)
	}
	var stats func() map[string]streams.Stats
	runErr := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sup *streams.Supervisor
	if a.instances > 1 {
		sup, err = streams.NewSupervisor(topo, streams.SupervisorConfig{Config: peerConfig(a, g, a.appID, a.stateDir, nil), Instances: a.instances})
		if err != nil {
			return fmt.Errorf("bench peer-worker: %w", err)
		}
		go func() { runErr <- sup.Run(ctx) }()
		stats = func() map[string]streams.Stats { return supervisedStats(sup) }
	} else {
		app, err := streams.New(topo, peerConfig(a, g, a.appID, a.stateDir, nil))
		if err != nil {
			return fmt.Errorf("bench peer-worker: %w", err)
		}
		go func() { runErr <- app.Run(ctx) }()
		defer app.Close()
		stats = func() map[string]streams.Stats { return map[string]streams.Stats{"app": app.Stats()} }
	}
	ev.print("started", "", -1)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last map[string]peerTasks
	for {
		select {
		case <-ctx.Done():
			ev.print("closed", "", -1)
			cancel()
			if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("bench peer-worker: %w", err)
			}
			return nil
		case err := <-runErr:
			ev.print("error", fmt.Sprint(err), -1)
			return fmt.Errorf("bench peer-worker: %w", err)
		case <-crash:
			if err := sup.Crash(peerFailoverVictim); err != nil {
				ev.print("error", err.Error(), -1)
				return fmt.Errorf("bench peer-worker: %w", err)
			}
			ev.print("crashed", peerFailoverVictim, -1)
		case <-tick.C:
			if tasks, ok := runningTasks(stats()); ok && !maps.EqualFunc(tasks, last, peerTasks.equal) {
				last = tasks
				ev.printTasks(tasks)
			}
		}
	}
}

// supervisedStats returns the Stats of sup's running instances.
func supervisedStats(sup *streams.Supervisor) map[string]streams.Stats {
	out := map[string]streams.Stats{}
	for _, info := range sup.Instances() {
		if info.State == streams.InstanceRunning {
			out[info.ID] = info.Stats
		}
	}
	return out
}

// runningTasks returns the tasks of each instance of stats, and whether
// every one of them is running (not rebalancing): while one is not, its
// tasks are in flux.
func runningTasks(stats map[string]streams.Stats) (map[string]peerTasks, bool) {
	out := make(map[string]peerTasks, len(stats))
	for id, s := range stats {
		if s.State != streams.Running {
			return nil, false
		}
		var t peerTasks
		for _, ts := range s.Tasks {
			t.Active = append(t.Active, ts.ID.Partition)
		}
		for _, sb := range s.Standbys {
			if !sb.Warmup {
				t.Standby = append(t.Standby, sb.ID.Partition)
			}
		}
		slices.Sort(t.Active)
		slices.Sort(t.Standby)
		out[id] = t
	}
	return out, len(out) > 0
}

func (t peerTasks) equal(u peerTasks) bool {
	return slices.Equal(t.Active, u.Active) && slices.Equal(t.Standby, u.Standby)
}

// printTasks prints a "tasks" event.
func (p *peerEvents) printTasks(tasks map[string]peerTasks) {
	p.printEvent(peerEvent{Event: "tasks", AtMs: time.Now().UnixMilli(), Tasks: tasks})
}

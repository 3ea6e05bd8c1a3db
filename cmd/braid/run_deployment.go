package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/deployconfig"
	"github.com/braidstream/braid/designer"
	rprocess "github.com/braidstream/braid/runtime/process"
	"github.com/braidstream/braid/runtime/streams"
)

// `braid run --deployment ID` runs what the designer deployed to
// processes it does not start (Kafka Connect's distributed mode): the
// design and settings of the deployment's record in the config topic
// (package deployconfig). The process follows the topic for as long as
// it runs, and moves to each new revision in its turn, restarting its
// Runner in place; an undeploy stops its instances and it waits for the
// deployment to come back rather than exit, so that an orchestrator
// that restarts what exits (a StatefulSet) does not loop.

// deploymentSettings are the flags of --deployment.
type deploymentSettings struct {
	id, topic string
}

func deploymentFlags(fs *flag.FlagSet) *deploymentSettings {
	d := &deploymentSettings{}
	fs.StringVar(&d.id, "deployment", "", "run the deployment ID the designer wrote to the config topic, in place of a design file: its design, application id, guarantee, standbys and commit interval, moving to each new revision in turn")
	fs.StringVar(&d.topic, "deployments-topic", deployconfig.DefaultTopic, "the config topic of the deployments, with --deployment")
	return d
}

// deploymentOwned are the flags a deployment's record sets: given with
// --deployment they are an error, not silently overridden, since the
// processes of one deployment must agree on them.
var deploymentOwned = []string{"app-id", "guarantee", "standbys", "commit-interval"}

// runDeployment checks the command line of `braid run --deployment` and
// runs it.
func runDeployment(ctx context.Context, fs *flag.FlagSet, flags *rprocess.Flags, dep *deploymentSettings, files []string,
	stdout io.Writer) error {
	var errs []error
	if len(files) > 0 {
		errs = append(errs, fmt.Errorf("--deployment %s runs the deployment's design: give no design file (got %q)", dep.id, files))
	}
	if err := deployconfig.CheckID(dep.id); err != nil {
		errs = append(errs, fmt.Errorf("--deployment: %w", err))
	}
	for _, name := range deploymentOwned {
		if flagSet(fs, name) {
			errs = append(errs, fmt.Errorf("--%s: set by the deployment %s; change it where it was deployed and redeploy", name, dep.id))
		}
	}
	pc, err := flags.Config()
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	rc := pc.Runner.WithDefaults()
	if rc.InstanceID == "" {
		return errors.New("run: --instance-id: empty, and the host name is unknown: give one")
	}
	if !pc.Client.IsZero() {
		if err := pc.Client.Check(ctx, rc.Config.Brokers); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	cfg, err := deployconfig.NewClient(deployconfig.Config{Brokers: rc.Config.Brokers, Topic: dep.topic, ClientOptions: rc.Config.ClientOptions})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer cfg.Close()
	d := &deploymentRun{id: dep.id, cfg: cfg, process: rc.InstanceID, log: slog.Default(),
		base: runOptions{runner: rc, telemetryTopic: pc.TelemetryTopic,
			control: controlSettings{topic: pc.ControlTopic, secret: pc.ControlSecret}, stdout: stdout, client: pc.Client}}
	return d.run(ctx)
}

// deploymentRun is one `braid run --deployment` process.
type deploymentRun struct {
	id  string
	cfg *deployconfig.Client
	// process is the process's id in the rollout's order: its
	// --instance-id.
	process string
	// base is the command line's options; each revision adds its
	// design and settings.
	base runOptions
	log  *slog.Logger

	// statusMu orders the writes of the process's Status, so that the
	// heartbeat never writes an old one after a newer.
	statusMu sync.Mutex
	status   deployconfig.Status
}

// current is the revision the process runs.
type current struct {
	revision int
	state    deployconfig.StatusState
	r        *runner
	stop     context.CancelFunc
	done     chan error
}

// follow is what the process has read of the config topic.
type follow struct {
	caughtUp bool
	// target is the deployment's record; nil before it is read, or
	// after its tombstone.
	target *deployconfig.Deployment
	procs  *deployconfig.Processes
	// ran says the process ran the deployment before its tombstone.
	ran bool
}

// run follows the topic and runs what it says until ctx ends, then stops
// the instances and removes the process's Status; or until an instance
// fails, then returns its error for the orchestrator to restart the
// process.
func (d *deploymentRun) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	updates := make(chan deployconfig.Update, 256)
	wg.Go(func() {
		_ = d.cfg.Follow(ctx, func(u deployconfig.Update) {
			select {
			case updates <- u:
			case <-ctx.Done():
			}
		})
	})
	d.status = deployconfig.Status{Deployment: d.id, Process: d.process, State: deployconfig.Waiting}
	wg.Go(func() { d.heartbeat(ctx) })
	err := d.loop(ctx, updates)
	cancel()
	wg.Wait()
	bg, done := context.WithTimeout(context.Background(), 2*time.Second)
	defer done()
	if err != nil {
		// Failed, not gone: the processes after this one keep waiting
		// while it is restarted (until its status is LiveFor old), rather
		// than move to a revision that fails.
		d.setStatus(bg, d.status.Revision, deployconfig.Failed)
		return err
	}
	// Gone: no one waits for this process's turn.
	if derr := d.cfg.DeleteStatus(bg, d.id, d.process); derr != nil {
		d.log.Warn("run: removing the process's status from the config topic", "err", derr)
	}
	return nil
}

// loop is run's: it owns the current revision.
func (d *deploymentRun) loop(ctx context.Context, updates <-chan deployconfig.Update) error {
	f := &follow{procs: deployconfig.NewProcesses(d.id)}
	var cur *current
	defer func() { d.stopCurrent(cur) }()
	tick := time.NewTicker(100 * time.Millisecond) // a poll of the instances' state and of the turn
	defer tick.Stop()
	said := ""
	say := func(line string) {
		if line != said {
			fmt.Fprintln(d.base.stdout, line)
			said = line
		}
	}
	for {
		var done chan error
		if cur != nil {
			done = cur.done
		}
		select {
		case <-ctx.Done():
			return nil
		case u := <-updates:
			f.apply(u, d.id)
		case err := <-done:
			cur.done = nil
			if err != nil {
				return err
			}
			return nil
		case <-tick.C:
		}
		var err error
		if cur, err = d.step(ctx, f, cur, say); err != nil {
			return err
		}
	}
}

// apply takes one update of the topic.
func (f *follow) apply(u deployconfig.Update, id string) {
	switch {
	case u.Kind == deployconfig.CaughtUp:
		f.caughtUp = true
	case u.ID != id:
	case u.Kind == deployconfig.Deployed:
		dep := u.Deployment
		f.target = &dep
	case u.Kind == deployconfig.Undeployed:
		f.target = nil
	default:
		f.procs.Apply(u, time.Now())
	}
}

// step moves the process one step towards what the topic says: waits,
// starts the deployment, sees its instances running, takes its turn at
// a new revision, or stops after an undeploy.
func (d *deploymentRun) step(ctx context.Context, f *follow, cur *current, say func(string)) (*current, error) {
	if !f.caughtUp {
		return cur, nil
	}
	switch {
	case f.target == nil:
		if cur != nil {
			d.stopCurrent(cur)
			d.setStatus(ctx, 0, deployconfig.Waiting)
			f.ran = true
		}
		if f.ran {
			say(fmt.Sprintf("deployment %q was undeployed: its instances stopped; waiting for it to be deployed again", d.id))
		} else {
			say(fmt.Sprintf("waiting for deployment %q in %s", d.id, d.cfg.Topic()))
		}
		return nil, nil
	case cur == nil:
		say(fmt.Sprintf("deployment %q: starting revision %d", d.id, f.target.Revision))
		return d.start(ctx, *f.target)
	case cur.state == deployconfig.Starting && instancesRunning(cur.r):
		cur.state = deployconfig.Running
		d.setStatus(ctx, cur.revision, deployconfig.Running)
		say(fmt.Sprintf("deployment %q: revision %d runs", d.id, cur.revision))
	}
	if f.target.Revision <= cur.revision {
		return cur, nil
	}
	rev := f.target.Revision
	if ok, wait := f.procs.Turn(d.process, rev, time.Now()); !ok {
		say(fmt.Sprintf("deployment %q: revision %d waits for its turn, after %s", d.id, rev, wait))
		return cur, nil
	}
	say(fmt.Sprintf("deployment %q: moving from revision %d to %d", d.id, cur.revision, rev))
	d.setStatus(ctx, rev, deployconfig.Restarting)
	d.stopCurrent(cur)
	return d.start(ctx, *f.target)
}

// start runs a revision: a runner of its design and settings, on a
// goroutine of its own that stopCurrent stops and waits for.
func (d *deploymentRun) start(ctx context.Context, dep deployconfig.Deployment) (*current, error) {
	opts := d.base
	g, err := streams.ParseGuarantee(dep.Guarantee)
	if err != nil {
		return nil, fmt.Errorf("run: deployment %s revision %d: %w", d.id, dep.Revision, err)
	}
	c := &opts.runner.Config
	c.ApplicationID, c.ProcessingGuarantee, c.StandbyReplicas = dep.ApplicationID, g, dep.Standbys
	c.CommitInterval = time.Duration(dep.CommitIntervalMs) * time.Millisecond
	if dep.SnapshotURL != "" {
		c.Snapshots.URL = dep.SnapshotURL // the deployment's, over --snapshots
	}
	if g == streams.ExactlyOnce {
		c.TransactionTimeout = streams.ExactlyOnceTransactionTimeout(c.CommitInterval)
	}
	if c.StateDir == "" {
		c.StateDir = streams.RunnerConfig{Config: *c}.WithDefaults().Config.StateDir
	}
	opts.path = fmt.Sprintf("deployment %s revision %d", d.id, dep.Revision)
	opts.design, opts.revision = dep.Design, dep.Revision
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	cur := &current{revision: dep.Revision, state: deployconfig.Starting, r: r, stop: stop, done: make(chan error, 1)}
	go func() { cur.done <- r.run(runCtx) }()
	d.setStatus(ctx, dep.Revision, deployconfig.Starting)
	return cur, nil
}

// stopCurrent stops the running revision's instances gracefully and
// waits for them.
func (d *deploymentRun) stopCurrent(cur *current) {
	if cur == nil || cur.done == nil {
		return
	}
	cur.stop()
	if err := <-cur.done; err != nil {
		d.log.Warn("run: the instances stopped with an error", "deployment", d.id, "revision", cur.revision, "err", err)
	}
	cur.done = nil
}

// instancesRunning reports whether every instance of r is running and
// past its rebalance.
func instancesRunning(r *runner) bool {
	infos := r.sup.Instances()
	for _, in := range infos {
		if in.State != streams.InstanceRunning || in.Stats.State != streams.Running {
			return false
		}
	}
	return len(infos) > 0
}

// setStatus writes the process's Status now.
func (d *deploymentRun) setStatus(ctx context.Context, revision int, state deployconfig.StatusState) {
	d.statusMu.Lock()
	defer d.statusMu.Unlock()
	d.status.Revision, d.status.State = revision, state
	d.writeStatusLocked(ctx)
}

// heartbeat writes the Status again every HeartbeatInterval, so that the
// other processes see this one live, until ctx ends.
func (d *deploymentRun) heartbeat(ctx context.Context) {
	t := time.NewTicker(deployconfig.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.statusMu.Lock()
		d.writeStatusLocked(ctx)
		d.statusMu.Unlock()
	}
}

func (d *deploymentRun) writeStatusLocked(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := d.cfg.PutStatus(wctx, d.status); err != nil && ctx.Err() == nil {
		d.log.Warn("run: writing the process's status to the config topic", "deployment", d.id, "err", err)
	}
}

// loadDesign is the design newRunner runs: the file at path, or the
// deployment's design.
func (o runOptions) loadDesign() (*designer.Design, *compiler.Compiled, error) {
	if o.design == nil {
		return loadDesign(o.path)
	}
	return compileDesign(o.path, o.design)
}

package telemetry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/streams"
)

// MinInterval is the shortest interval between two reports of a
// process: at most four a second.
const MinInterval = 250 * time.Millisecond

// windowsPerStore bounds the open windows a report carries per task and
// store, the newest; the live page shows 30.
const windowsPerStore = 30

// PublisherConfig configures a Publisher. Zero fields take the defaults
// their comments give.
type PublisherConfig struct {
	Brokers []string
	// ClientOptions are added to the Publisher's client (TLS, SASL).
	ClientOptions []kgo.Opt
	// Topic is the telemetry topic; default DefaultTopic. It is created,
	// with a retention of an hour, if it does not exist.
	Topic string
	// ReplicationFactor of the telemetry topic when the Publisher creates
	// it; 0: min(3, the cluster's brokers), as streams.Config's.
	ReplicationFactor int
	// Deployment describes the application in every report; its
	// ApplicationID is required, and its Design, if any, must be JSON
	// (reports carry it compacted, every 10 s).
	Deployment Deployment
	// Topology, when set, fills Deployment's Stores and SinkNodes.
	Topology *streams.Topology
	// Process names this process among the application's; default
	// "<hostname>-<pid>".
	Process string
	// Interval between two reports; default and minimum MinInterval.
	Interval time.Duration
	Logger   *slog.Logger
}

// Validate reports every problem of the config at once.
func (c PublisherConfig) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("Brokers: no broker given"))
	}
	if c.Deployment.ApplicationID == "" {
		errs = append(errs, errors.New("Deployment.ApplicationID: empty"))
	}
	if len(c.Deployment.Design) > 0 && !json.Valid(c.Deployment.Design) {
		errs = append(errs, errors.New("Deployment.Design: not JSON"))
	}
	if c.ReplicationFactor < 0 {
		errs = append(errs, fmt.Errorf("ReplicationFactor: %d is negative", c.ReplicationFactor))
	}
	if c.Interval != 0 && c.Interval < MinInterval {
		errs = append(errs, fmt.Errorf("Interval: %v is below the minimum %v", c.Interval, MinInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry publisher config: %w", err)
	}
	return nil
}

func (c PublisherConfig) withDefaults() PublisherConfig {
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Process == "" {
		host, _ := os.Hostname()
		c.Process = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.Interval == 0 {
		c.Interval = MinInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if t := c.Topology; t != nil {
		c.Deployment.Stores, c.Deployment.SinkNodes = t.Stores(), t.SinkNodes()
	}
	return c
}

// Source is what a Publisher reports: the instances of a process and
// their open windows. A *streams.Supervisor is one.
type Source interface {
	Instances() []streams.InstanceInfo
	OpenWindows(instance, store string) ([]streams.OpenWindow, error)
}

// Publisher writes the reports of one process of an application to the
// telemetry topic. Put Hook in the instances' streams.Config.Hooks,
// Attach the Supervisor, and Run it beside the Supervisor.
type Publisher struct {
	cfg PublisherConfig
	// design is the compacted design file, which info leaves out.
	design  []byte
	info    Deployment
	started time.Time
	queue   *queue
	source  atomic.Pointer[Source]
	cl      *kgo.Client
	close   sync.Once
	// failed counts the reports the producer could not send, or had no
	// room for; Run's goroutine alone touches the rest.
	failed  atomic.Int64
	seq     uint64
	warned  time.Time
	created bool
}

// NewPublisher returns a Publisher with its client; Run closes it, and so
// does Close, for a Publisher that is not to run.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var design bytes.Buffer
	if d := cfg.Deployment.Design; len(d) > 0 {
		_ = json.Compact(&design, d) // valid, as Validate checked
	}
	opts := append([]kgo.Opt{}, cfg.ClientOptions...)
	opts = append(opts, kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic),
		// A handful of reports at most wait for the broker: an older one
		// says nothing a newer one does not.
		kgo.MaxBufferedRecords(8), kgo.RecordDeliveryTimeout(10*time.Second),
		kgo.ProducerBatchMaxBytes(4<<20))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the telemetry client: %w", err)
	}
	p := &Publisher{cfg: cfg, info: cfg.Deployment, design: design.Bytes(), started: time.Now(), queue: newQueue(), cl: cl}
	p.info.Design = nil
	return p, nil
}

// Hook is the hook to put in the Config.Hooks of every instance the
// process runs: it queues their events for the next report.
func (p *Publisher) Hook() streams.Hook { return p.queue }

// Attach sets what the reports describe, the process's Supervisor; until
// it is called, Run reports nothing.
func (p *Publisher) Attach(src Source) { p.source.Store(&src) }

// Close closes the Publisher's client. Run closes it on its way out;
// Close is for a Publisher that never ran, and does nothing after Run.
func (p *Publisher) Close() { p.close.Do(p.cl.Close) }

// Run reports every Interval until ctx ends, then sends a last report
// marked final (the instances have stopped by then when the caller stops
// its Supervisor first), waits up to two seconds for it and closes the
// client. It returns nil: a broker that does not take a report costs the
// report, not the application.
func (p *Publisher) Run(ctx context.Context) error {
	defer p.Close()
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			p.publishFinal()
			return nil
		case <-tick.C:
			p.publish(ctx, false)
		}
	}
}

func (p *Publisher) publishFinal() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	p.publish(ctx, true)
	if err := p.cl.Flush(ctx); err != nil {
		p.cfg.Logger.Warn("telemetry: the last report was not sent", "err", err)
	}
}

// publish sends one report, unless no source is attached yet.
func (p *Publisher) publish(ctx context.Context, final bool) {
	src := p.source.Load()
	if src == nil {
		return
	}
	if !p.created {
		p.created = p.ensureTopic(ctx)
	}
	r := p.report(*src, final)
	value, err := json.Marshal(r)
	if err != nil {
		p.warn("encoding a report", err)
		return
	}
	rec := &kgo.Record{Key: []byte(r.Key()), Value: value}
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			p.failed.Add(1)
		}
	}
	if final {
		p.cl.Produce(ctx, rec, promise)
		return
	}
	// TryProduce fails at once when the buffer is full: the broker is
	// slow or away, and the process must not wait for it.
	p.cl.TryProduce(ctx, rec, promise)
	if n := p.failed.Swap(0); n > 0 {
		p.warn("sending reports", fmt.Errorf("%d reports not sent", n))
	}
}

// report builds the next report: every instance and what was queued.
func (p *Publisher) report(src Source, final bool) Report {
	p.seq++
	now := time.Now()
	r := Report{Version: ReportVersion, App: p.info.ApplicationID, Process: p.cfg.Process, Started: p.started.UnixMilli(),
		Seq: p.seq, Time: now.UnixMilli(), IntervalMs: p.cfg.Interval.Milliseconds(), Final: final, Deployment: p.info}
	if p.seq%designEvery == 1 {
		r.Deployment.Design = p.design
	}
	for _, info := range src.Instances() {
		w := InstanceOf(info)
		if info.State == streams.InstanceRunning {
			w.Windows = p.windows(src, info.ID)
		}
		r.Instances = append(r.Instances, w)
	}
	events, dropped := p.queue.take()
	r.Dropped = dropped
	for _, ev := range events {
		body, err := json.Marshal(ev.ev)
		if err != nil {
			r.Dropped++
			continue
		}
		r.Events = append(r.Events, Event{Kind: ev.kind, At: ev.at.UnixMilli(), Body: body})
	}
	return r
}

// windows reads the open windows of an instance's windowed stores, the
// newest windowsPerStore of each task's store.
func (p *Publisher) windows(src Source, instance string) map[string][]streams.OpenWindow {
	var out map[string][]streams.OpenWindow
	for _, st := range p.info.Stores {
		if st.Type != "window" && st.Type != "session" {
			continue
		}
		ws, err := src.OpenWindows(instance, st.Name)
		if err != nil {
			continue // busy: the next report has them
		}
		if out == nil {
			out = make(map[string][]streams.OpenWindow)
		}
		out[st.Name] = newestPerTask(ws, windowsPerStore)
	}
	return out
}

func newestPerTask(ws []streams.OpenWindow, n int) []streams.OpenWindow {
	ws = slices.Clone(ws)
	slices.SortStableFunc(ws, func(a, b streams.OpenWindow) int { return cmp.Compare(b.End, a.End) })
	count := make(map[streams.TaskID]int)
	kept := ws[:0]
	for _, w := range ws {
		if count[w.Task] < n {
			count[w.Task]++
			kept = append(kept, w)
		}
	}
	return kept
}

// warn logs a failure at most once a minute: a broker away for an hour
// must not fill the log.
func (p *Publisher) warn(what string, err error) {
	if time.Since(p.warned) < time.Minute {
		return
	}
	p.warned = time.Now()
	p.cfg.Logger.Warn("telemetry: "+what, "topic", p.cfg.Topic, "err", err)
}

func (p *Publisher) ensureTopic(ctx context.Context) bool {
	if err := EnsureTopic(ctx, p.cl, p.cfg.Topic, p.cfg.ReplicationFactor, p.cfg.Logger); err != nil {
		p.warn("creating the topic", err)
		return false
	}
	return true
}

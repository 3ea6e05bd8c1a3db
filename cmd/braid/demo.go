package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The demo: orders -> filter amount >= 50 -> add a tier -> re-key by
// customer -> repartition -> big-orders-by-customer, a count of big
// orders per customer in a store -> big-order-counts, and a count per
// customer in tumbling 10 s windows with 5 s grace, sent when each window
// closes -> big-orders-per-10s.
func demoTopology() (*streams.Topology, error) {
	b := streams.NewBuilder()
	byCustomer := b.Stream([]string{"orders"}, streams.WithSerdes(streams.String, streams.JSON), streams.WithTimestamps(streams.JSONTimestamp("ts"))).
		Filter(func(_, v any) (bool, error) {
			amount, ok := v.(map[string]any)["amount"].(float64)
			if !ok {
				return false, errors.New(`field "amount" is not a number`)
			}
			return amount >= 50, nil
		}, streams.Named("big-orders")).
		MapValues(func(v any) (any, error) {
			order := v.(map[string]any)
			order["tier"] = "gold"
			if order["amount"].(float64) < 100 {
				order["tier"] = "silver"
			}
			return order, nil
		}, streams.Named("add-tier")).
		SelectKey(func(_, v any) (any, error) { return v.(map[string]any)["customer"], nil }, streams.Named("by-customer-key")).
		Repartition(streams.Named("by-customer"), streams.WithSerdes(streams.String, streams.JSON))
	byCustomer.To("big-orders-by-customer", streams.Named("big-orders-sink"))
	byCustomer.GroupByKey().
		Count(streams.Named("count-big-orders"), streams.Materialized(streams.StoreOptions{Name: "big-orders-per-customer"})).
		To("big-order-counts", streams.WithSerdes(streams.String, streams.Int64))
	byCustomer.GroupByKey().
		WindowedBy(streams.Tumbling(10*time.Second, 5*time.Second)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Named("count-per-10s"), streams.Materialized(streams.StoreOptions{Name: "big-orders-per-10s"})).
		To("big-orders-per-10s", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	return b.Build()
}

func runDemo(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("demo", "braid demo [--listen 127.0.0.1:9092] [--rate N] [--instances N]", stdout)
	listen := fs.String("listen", "127.0.0.1:9092", "broker address; 127.0.0.1:0 picks a free port")
	rate := fs.Int("rate", 200, "orders generated per second")
	instances := fs.Int("instances", 2, "App instances of the demo topology in this process")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *rate <= 0 || *instances <= 0 {
		return errors.New("demo: --rate and --instances must be positive")
	}
	b, err := broker.Start(broker.Config{Listen: *listen, Logger: slog.Default()})
	if err != nil {
		return fmt.Errorf("demo: --listen: %w", err)
	}
	defer b.Close()
	topo, err := demoTopology()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "braid demo: broker on %s (kcat -b %s -C -t big-orders-by-customer)\n\n%s", b.Addr(), b.Addr(), topo.Describe())
	if err := createDemoTopics(ctx, b.Addrs()); err != nil {
		return err
	}

	// Each instance keeps its state apart, as on separate machines; a new
	// broker means new changelogs, so old state is of no use.
	stateRoot, err := os.MkdirTemp("", "braid-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateRoot)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, *instances+1)
	wg.Go(func() { errc <- generateOrders(ctx, b.Addrs(), *rate) })
	apps := make([]*streams.App, *instances)
	for i := range apps {
		app, err := streams.New(topo, streams.Config{
			ApplicationID:  "braid-demo",
			Brokers:        b.Addrs(),
			InstanceID:     fmt.Sprintf("demo-%d", i),
			StateDir:       filepath.Join(stateRoot, fmt.Sprintf("demo-%d", i)),
			CommitInterval: time.Second,
			Hooks:          []streams.Hook{demoPrinter{stdout}},
			// The hooks print what happens; the log adds only trouble.
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			return err
		}
		apps[i] = app
		wg.Go(func() { errc <- app.Run(ctx) })
	}
	report := time.NewTicker(2 * time.Second)
	defer report.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			fmt.Fprintln(stdout, "braid demo: stopped")
			return nil
		case err := <-errc:
			if err != nil {
				cancel()
				wg.Wait()
				return err
			}
		case <-report.C:
			printDemoStats(stdout, apps)
		}
	}
}

func createDemoTopics(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, topic := range []string{"orders", "big-orders-by-customer", "big-order-counts", "big-orders-per-10s"} {
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("creating demo topic %q: %w", topic, err)
		}
	}
	return nil
}

// generateOrders produces rate orders a second, keyed by order id, until
// ctx ends.
func generateOrders(ctx context.Context, brokers []string, rate int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		return err
	}
	defer cl.Close()
	tick := time.NewTicker(time.Second / time.Duration(min(rate, 1000)))
	defer tick.Stop()
	perTick := max(1, rate/1000)
	for id := 0; ; {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for range perTick {
			id++
			order, _ := json.Marshal(map[string]any{
				"id":       id,
				"customer": fmt.Sprintf("customer-%02d", rand.IntN(20)),
				"amount":   float64(rand.IntN(15000)) / 100,
				"ts":       time.Now().UnixMilli(),
			})
			cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "order-%d", id), Value: order}, nil)
		}
	}
}

// demoPrinter prints task and state events as they happen.
type demoPrinter struct{ w io.Writer }

func (p demoPrinter) OnTaskAssigned(e streams.TaskEvent) {
	fmt.Fprintf(p.w, "%s  task %s assigned to %s %v\n", clock(), e.Task, e.InstanceID, e.Partitions)
}

func (p demoPrinter) OnStateChange(e streams.StateChange) {
	fmt.Fprintf(p.w, "%s  %s: %s -> %s\n", clock(), e.InstanceID, e.From, e.To)
}

func (p demoPrinter) OnError(e streams.ErrorEvent) {
	fmt.Fprintf(p.w, "%s  %s: error in task %s: %v\n", clock(), e.InstanceID, e.Task, e.Err)
}

func (p demoPrinter) OnRestoreStart(e streams.RestoreEvent) {
	fmt.Fprintf(p.w, "%s  %s: task %s restoring store %s from %s/%d offsets %d..%d\n", clock(), e.InstanceID, e.Task, e.Store, e.Changelog, e.Partition, e.StartOffset, e.EndOffset)
}

func (p demoPrinter) OnRestoreProgress(streams.RestoreEvent) {}

func (p demoPrinter) OnWindowClosed(e streams.WindowClosedEvent) {
	fmt.Fprintf(p.w, "%s  %s: task %s closed window [%s, %s) of %s at stream time %s (grace %v): %d customers\n",
		clock(), e.InstanceID, e.Task, hhmmss(e.Start), hhmmss(e.End), e.Store, hhmmss(e.StreamTime), e.Grace, e.Keys)
}

func (p demoPrinter) OnLateRecordDropped(e streams.LateRecordEvent) {
	fmt.Fprintf(p.w, "%s  %s: task %s dropped a late record at %s (stream time %s) from %s/%d offset %d\n",
		clock(), e.InstanceID, e.Task, hhmmss(e.Timestamp), hhmmss(e.StreamTime), e.Topic, e.Partition, e.Offset)
}

func hhmmss(ms int64) string { return time.UnixMilli(ms).Format("15:04:05") }

func (p demoPrinter) OnRestoreEnd(e streams.RestoreEvent) {
	fmt.Fprintf(p.w, "%s  %s: task %s restored %d records of store %s in %v\n", clock(), e.InstanceID, e.Task, e.Restored, e.Store, e.Took.Round(time.Millisecond))
}

func printDemoStats(w io.Writer, apps []*streams.App) {
	for _, app := range apps {
		st := app.Stats()
		for _, t := range st.Tasks {
			lag := "-"
			if t.StreamTime >= 0 {
				lag = time.Since(time.UnixMilli(t.StreamTime)).Round(time.Millisecond).String()
			}
			fmt.Fprintf(w, "%s  %-7s task %-4s processed %7d  stream time %s behind\n", clock(), st.InstanceID, t.ID, t.Processed, lag)
		}
		var top []string
		app.Range("big-orders-per-customer", nil, nil, func(customer, n any) bool {
			top = append(top, fmt.Sprintf("%v=%v", customer, n))
			return len(top) < 5
		})
		if len(top) > 0 {
			fmt.Fprintf(w, "%s  %-7s big orders per customer (store big-orders-per-customer): %v\n", clock(), st.InstanceID, top)
		}
	}
}

func clock() string { return time.Now().Format("15:04:05.000") }

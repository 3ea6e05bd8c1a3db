package main

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/deployconfig"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/broker"
	controlpkg "github.com/braidstream/braid/runtime/control"
	"github.com/braidstream/braid/runtime/streams"
	rtelemetry "github.com/braidstream/braid/runtime/telemetry"
	"github.com/braidstream/braid/telemetry"
	"github.com/braidstream/braid/web"
)

// demoDesign is loaded into a new design store: orders -> filter
// (value.amount >= 50) -> group by customer -> tumbling 10 s count with
// 5 s grace, emitted when each window closes -> to-stream -> sink. A copy
// of designer/testdata/orders-windowed.json, named orders-demo.
//
//go:embed orders-demo.json
var demoDesign []byte

// runServe runs the designer's web server with the embedded broker beside
// it, until ctx ends.
func runServe(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("serve", "braid serve [--listen 127.0.0.1:8080] [--data-dir DIR] [--auth-token TOKEN] [--broker-listen 127.0.0.1:9092] [--sync] [--retention 15m] [--sasl-user USER --sasl-password PASS] [--insecure-broker] [--brokers ADDRS [--client-config FILE]] [--no-demo] [--deployments-topic T] [--rebalance-protocol cooperative|eager]", stdout)
	listen := fs.String("listen", web.DefaultListen, "host:port of the web UI; a non-loopback address needs --auth-token")
	dataDir := fs.String("data-dir", "braid-data", "directory of the designs (DIR/designs), the broker's data (DIR/broker) and the monitor's history (DIR/monitor)")
	token := fs.String("auth-token", os.Getenv("BRAID_AUTH_TOKEN"), "token every request must carry (default $BRAID_AUTH_TOKEN); required off loopback")
	brokerListen := fs.String("broker-listen", "127.0.0.1:9092", "host:port of the embedded Kafka-compatible broker (a non-loopback address needs --sasl-user or --insecure-broker); empty: run none")
	brokers := fs.String("brokers", "", "comma-separated Kafka bootstrap addresses for deployments and telemetry (default: bootstrap.servers of --client-config, else the embedded broker, which --brokers turns off unless --broker-listen is given); --client-config's TLS and SASL apply to them, or else --sasl-user and --sasl-password")
	noDemo := fs.Bool("no-demo", false, "do not deploy the demo design (orders-demo) with its generator on a new data directory")
	stateDemoKeys := fs.Int("state-demo-keys", defaultStateDemoKeys, "customers of the state demo (customer-totals, a count per customer on one instance) deployed beside the demo on a new data directory, one order each, so that a lost disk's restore is long enough to watch; 0: no state demo")
	control := controlFlags(fs)
	queryToken := fs.String("query-token", "", "bearer token sent to the store servers of applications run elsewhere (their braid run --query-token), through which the store browser queries them (default $"+streams.QueryTokenEnv+")")
	telemetryTopic := fs.String("telemetry-topic", rtelemetry.DefaultTopic, "topic the instances of applications run elsewhere (braid run, exported programs) report on; the server shows each application it finds there; empty: read none")
	deploymentsTopic := fs.String("deployments-topic", deployconfig.DefaultTopic, "config topic of the deployments to processes you start (braid run --deployment ID), read from its start")
	protocol := fs.String("rebalance-protocol", "cooperative", "how the deployments' instances hand tasks over: cooperative stops only the tasks that move, eager every task of every instance for each rebalance")
	auth := brokerAuthFlags(fs)
	client := clientFlags(fs)
	syncWrites := syncFlag(fs)
	retention := fs.Duration("retention", serveRetention, "how long the embedded broker keeps records of delete-policy topics (sources, sinks, repartition topics); it holds them in memory")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	if *dataDir == "" {
		return errors.New("serve: --data-dir must not be empty")
	}
	if *stateDemoKeys < 0 {
		return fmt.Errorf("serve: --state-demo-keys %d: want 0 (none) or more", *stateDemoKeys)
	}
	if err := control.load(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := client.load(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if *brokers == "" {
		*brokers = strings.Join(client.cfg.BootstrapServers, ",")
	}
	// The clients of --brokers log in as the client configuration says,
	// or else with --sasl-user; the embedded broker takes --sasl-user.
	clientOpts := broker.SASLClientOptions(*auth.user, *auth.password)
	if !client.cfg.IsZero() {
		if *brokers == "" {
			return errors.New("serve: --client-config is for the cluster of --brokers (or its bootstrap.servers); the embedded broker takes --sasl-user")
		}
		clientOpts = client.opts
	}
	if *brokers != "" && !flagSet(fs, "broker-listen") {
		// Deployments go to the cluster given: an embedded broker beside
		// it would hold nothing, and would take the port of a `braid
		// broker` started on the same machine.
		*brokerListen = ""
	}
	var rebalance streams.RebalanceProtocol
	switch *protocol {
	case streams.RebalanceCooperative.String():
		rebalance = streams.RebalanceCooperative
	case streams.RebalanceEager.String():
		rebalance = streams.RebalanceEager
	default:
		return fmt.Errorf("serve: --rebalance-protocol %q: want cooperative or eager", *protocol)
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return fmt.Errorf("serve: %w", err)
	}

	designsDir := filepath.Join(*dataDir, "designs")
	_, statErr := os.Stat(designsDir)
	newStore := errors.Is(statErr, os.ErrNotExist)
	store, err := designer.OpenStore(designsDir)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer store.Close()
	if newStore {
		if err := loadDemo(store); err != nil {
			return fmt.Errorf("serve: loading the demo design: %w", err)
		}
		if *stateDemoKeys > 0 && !*noDemo {
			if err := loadStateDemo(store); err != nil {
				return fmt.Errorf("serve: loading the state demo design: %w", err)
			}
		}
	}

	var b *broker.Broker
	if *brokerListen != "" {
		b, err = broker.Start(broker.Config{Listen: *brokerListen, DataDir: filepath.Join(*dataDir, "broker"), Sync: *syncWrites, Logger: slog.Default(),
			SASLUser: *auth.user, SASLPassword: *auth.password, Insecure: *auth.insecure, Retention: *retention})
		if err != nil {
			return fmt.Errorf("serve: %w", auth.explain(err, "--broker-listen"))
		}
		defer b.Close()
	}
	bootstrap := streams.SplitBrokers(*brokers)
	if len(bootstrap) == 0 && b != nil {
		bootstrap = b.Addrs()
	}
	if err := client.check(ctx, bootstrap); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// The monitor's events and a snapshot a second, for the last 10
	// minutes, so that a restarted server shows recent failovers and
	// the live page replays them (monitor/history.go).
	history, err := monitor.OpenHistory(filepath.Join(*dataDir, "monitor"), monitor.HistoryOptions{Logger: slog.Default()})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer history.Close()
	mon := monitor.New(monitor.Options{History: history})
	var deployments *deploy.Manager
	var commands deploy.CommandSender
	if len(bootstrap) > 0 && len(control.secret) > 0 {
		sender, err := controlpkg.NewSender(controlpkg.SenderConfig{Brokers: bootstrap, Topic: control.topic, Secret: control.secret,
			ClientOptions: clientOpts})
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer sender.Close()
		commands = sender
	}
	if len(bootstrap) > 0 {
		deployments, err = deploy.NewManager(deploy.Config{
			Brokers: bootstrap, StateDir: filepath.Join(*dataDir, "state"), Designs: store, Monitor: mon, Logger: quietLogger(),
			RebalanceProtocol: rebalance,
			RecordFile:        filepath.Join(*dataDir, "deployments.json"),
			SnapshotDir:       filepath.Join(*dataDir, "snapshots"),
			ClientOptions:     clientOpts,
			Commands:          commands,
			DeploymentTopic:   *deploymentsTopic,
			QueryToken:        cmp.Or(*queryToken, os.Getenv(streams.QueryTokenEnv)),
		})
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}

	srv, err := web.New(web.Config{Listen: *listen, AuthToken: *token, Store: store, Logger: slog.Default(),
		Deployments: deployments, Monitor: mon})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer srv.Close()

	fmt.Fprintf(stdout, "braid serve: the designer is at %s\n", srv.URL())
	if b != nil {
		fmt.Fprintf(stdout, "braid serve: embedded broker at %s\n", b.Addr())
	}
	fmt.Fprintf(stdout, "braid serve: data in %s; stop with Ctrl-C\n", *dataDir)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The broker is closed by the deferred Close once all of these have
	// returned: the deployments commit on their way out.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	wg.Go(func() {
		defer cancel()
		errs[0] = srv.Listen(ctx)
	})
	wg.Go(func() { errs[1] = mon.Run(ctx) })
	if deployments != nil {
		wg.Go(func() { errs[2] = deployments.Run(ctx) })
		// Run redeploys the deployments of DIR/deployments.json first,
		// with the settings they last had. A new data directory has no
		// such file: it gets the demo.
		select {
		case <-deployments.Ready():
		case <-ctx.Done():
		}
		if deployments.HadRecords() {
			local := 0
			for _, d := range deployments.List() {
				if !d.Orchestrated {
					local++
				}
			}
			fmt.Fprintf(stdout, "braid serve: redeployed %d recorded deployments from %s\n", local, filepath.Join(*dataDir, "deployments.json"))
		}
		for _, d := range deployments.List() {
			if d.Orchestrated {
				fmt.Fprintf(stdout, "braid serve: deployment %s (revision %d, %d standbys, %s) runs in processes you start (%s), live at %s\n",
					d.ID, d.Revision, d.Standbys, d.Guarantee, d.RunCommand, liveURL(srv.URL(), d.ID))
				continue
			}
			fmt.Fprintf(stdout, "braid serve: redeployed %s (revision %d, %d instances, %d standbys, %s) live at %s\n",
				d.ID, d.Revision, d.Instances, d.Standbys, d.Guarantee, liveURL(srv.URL(), d.ID))
		}
		// Nor does one whose cluster holds orchestrated deployments: the
		// demo, deployed here, would replace one of the demo's.
		if _, _, err := store.Get(demoID); err == nil && !*noDemo && !deployments.HadRecords() && len(deployments.List()) == 0 {
			switch genErr, err := deployDemo(deployments); {
			case err != nil:
				fmt.Fprintf(stdout, "braid serve: the demo was not deployed: %v\n", err)
			case genErr != nil:
				fmt.Fprintf(stdout, "braid serve: the demo design runs live at %s, without its generator: %v\n", liveURL(srv.URL(), demoID), genErr)
			default:
				fmt.Fprintf(stdout, "braid serve: the demo design runs live at %s\n", liveURL(srv.URL(), demoID))
			}
			if _, _, err := store.Get(stateDemoID); err == nil && *stateDemoKeys > 0 {
				if err := deployStateDemo(ctx, deployments, bootstrap, clientOpts, *stateDemoKeys); err != nil {
					fmt.Fprintf(stdout, "braid serve: the state demo was not deployed: %v\n", err)
				} else {
					fmt.Fprintf(stdout, "braid serve: the state demo (%d customers) runs live at %s\n", *stateDemoKeys, liveURL(srv.URL(), stateDemoID))
				}
			}
		}
	}
	// The telemetry is read once the deployments are known, so that an
	// orchestrated deployment's reports find it (DeploymentOf).
	if len(bootstrap) > 0 && *telemetryTopic != "" {
		reader, err := telemetry.NewReader(telemetry.ReaderConfig{Brokers: bootstrap, Topic: *telemetryTopic, Monitor: mon,
			ClientOptions: clientOpts, Local: deployments.RunsApplication, Logger: slog.Default(),
			// An application whose processes report its design gets a
			// live page, drawn from that design.
			OnDesign: func(info monitor.DeploymentInfo, design []byte) {
				if err := deployments.Watch(info, design); err != nil {
					slog.Warn("serve: the live page of an application found in telemetry cannot be drawn", "app", info.ID, "err", err)
				}
			},
			OnRemoved: deployments.Unwatch,
			// GET /api/deployments and the designs list show each
			// application with its processes.
			OnProcesses: deployments.WatchProcesses,
			// The processes of an orchestrated deployment report under
			// its application id and show as that deployment.
			DeploymentID: deployments.DeploymentOf,
		})
		if err != nil {
			cancel()
			wg.Wait()
			return fmt.Errorf("serve: %w", err)
		}
		wg.Go(func() { errs[3] = reader.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// liveURL is the live page of a deployment on the server at base (its
// designs list, perhaps with a ?token=).
func liveURL(base, id string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/live/" + url.PathEscape(id)
	return u.String()
}

// serveRetention is serve's default --retention: the embedded broker
// holds every record in memory, and a demo or generator left running
// for hours must not grow it without bound. Kafka's default is 7 days.
const serveRetention = 15 * time.Minute

// demoID is the demo design's id.
const demoID = "orders-demo"

// deployDemo deploys the demo design with 3 instances and 1 standby, and
// a generator of orders: 20 customers, 50 orders a second, up to 2 s out
// of order, 2% late beyond the 5 s grace. Run is running (Ready closed).
// The generator does not start on an orders topic another producer feeds
// (a cluster's own): the demo then runs on that producer's records, and
// genErr says why.
func deployDemo(m *deploy.Manager) (genErr, err error) {
	if _, err := m.Deploy(deploy.Request{Design: demoID, Instances: 3, Standbys: new(1)}); err != nil {
		return nil, err
	}
	return m.StartGenerator(demoID, deploy.GeneratorSpec{
		Topic: "orders", Rate: 50, Keys: 20, KeyPrefix: "customer",
		Template:     demoOrder(),
		JitterMs:     2000,
		LateFraction: 0.02,
		LateByMs:     20_000,
	}), nil
}

// demoOrder is the template of the demo's orders, which orders-demo.json
// reads: braid gen makes them too when given no --field.
func demoOrder() map[string]string {
	return map[string]string{"id": "sequence", "customer": "key", "amount": "random(1, 500)", "ts": "timestamp"}
}

// quietLogger is the deployments' logger: warnings and errors only, so
// that task moves do not flood the terminal (the live view shows them).
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// loadDemo saves the demo design into store, unless it holds designs
// already.
func loadDemo(store *designer.Store) error {
	list, err := store.List()
	if err != nil {
		return err
	}
	if len(list) > 0 {
		return nil
	}
	_, _, err = store.Import(demoDesign)
	return err
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

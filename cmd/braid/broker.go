package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/braidstream/braid/runtime/broker"
)

func runBroker(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("broker", "braid broker [--listen 127.0.0.1:9092] [--advertise HOST:PORT] [--data-dir DIR [--sync]] [--partitions N] [--retention 168h] [--sasl-user USER --sasl-password PASS] [--insecure-broker]", stdout)
	listen := fs.String("listen", "127.0.0.1:9092", "host:port to listen on; a non-loopback address needs --sasl-user or --insecure-broker")
	advertise := fs.String("advertise", "", "host:port the broker tells clients to connect to (Kafka's advertised.listeners), e.g. a proxy's or a NAT's address; empty: the --listen address")
	dataDir := fs.String("data-dir", "", "directory to persist topics, records and offsets in; empty keeps them in memory")
	syncWrites := syncFlag(fs)
	partitions := fs.Int("partitions", 4, "partition count of automatically created topics")
	auth := brokerAuthFlags(fs)
	retention := fs.Duration("retention", broker.DefaultRetention, "how long records of delete-policy topics are kept (Kafka's log.retention.ms); compacted topics are compacted instead")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("broker: unexpected arguments %q", fs.Args())
	}
	if *syncWrites && *dataDir == "" {
		return errors.New("broker: --sync needs --data-dir: a broker in memory writes nothing to sync")
	}
	b, err := broker.Start(broker.Config{Listen: *listen, Advertise: *advertise, DataDir: *dataDir, Sync: *syncWrites, Partitions: *partitions, Logger: slog.Default(),
		SASLUser: *auth.user, SASLPassword: *auth.password, Insecure: *auth.insecure, Retention: *retention})
	if err != nil {
		return fmt.Errorf("broker: %w", auth.explain(err, "--listen"))
	}
	where := "in memory"
	if *dataDir != "" {
		where = "persisting to " + *dataDir
		if *syncWrites {
			where += ", fsync on every write"
		}
	}
	if *advertise != "" {
		where = "advertised as " + b.Addr() + ", " + where
	}
	if *auth.user != "" {
		where += ", SASL " + broker.SASLMechanism + " as " + *auth.user
	}
	// The chaos tests read the listen address from this line.
	fmt.Fprintf(stdout, "braid broker listening on %s (%s); stop with Ctrl-C\n", b.ListenAddr(), where)
	return b.Run(ctx)
}

// syncFlag is the embedded broker's --sync, the same on `braid broker`
// and `braid serve`.
func syncFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("sync", false, "fsync every write of the broker's data dir before acknowledging it: an acknowledged produce then survives a machine crash or power loss, not only a killed broker; slower")
}

// brokerAuth are the embedded broker's authentication flags, the same on
// `braid broker` and `braid serve`.
type brokerAuth struct {
	user, password *string
	insecure       *bool
}

func brokerAuthFlags(fs *flag.FlagSet) brokerAuth {
	return brokerAuth{
		user:     fs.String("sasl-user", "", "require SASL "+broker.SASLMechanism+" with this user (and --sasl-password) on the broker"),
		password: fs.String("sasl-password", os.Getenv("BRAID_BROKER_PASSWORD"), "the --sasl-user's password (default $BRAID_BROKER_PASSWORD)"),
		insecure: fs.Bool("insecure-broker", false, "let the broker listen off loopback without SASL: anyone who reaches it can read and write every topic"),
	}
}

// explain turns the broker's refusal of an unauthenticated exposure into
// one that names the flags.
func (a brokerAuth) explain(err error, listenFlag string) error {
	var ue *broker.UnauthenticatedError
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w; give --sasl-user and --sasl-password (or $BRAID_BROKER_PASSWORD), or accept an open broker with --insecure-broker", listenFlag, ue.Listen, err)
	}
	return err
}

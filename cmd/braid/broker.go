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
	fs := newFlagSet("broker", "braid broker [--listen 127.0.0.1:9092] [--data-dir DIR] [--partitions N] [--retention 168h] [--sasl-user USER --sasl-password PASS] [--insecure-broker]", stdout)
	listen := fs.String("listen", "127.0.0.1:9092", "host:port to listen on; a non-loopback address needs --sasl-user or --insecure-broker")
	dataDir := fs.String("data-dir", "", "directory to persist topics, records and offsets in; empty keeps them in memory")
	partitions := fs.Int("partitions", 4, "partition count of automatically created topics")
	auth := brokerAuthFlags(fs)
	retention := fs.Duration("retention", broker.DefaultRetention, "how long records of delete-policy topics are kept (Kafka's log.retention.ms); compacted topics are compacted instead")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("broker: unexpected arguments %q", fs.Args())
	}
	b, err := broker.Start(broker.Config{Listen: *listen, DataDir: *dataDir, Partitions: *partitions, Logger: slog.Default(),
		SASLUser: *auth.user, SASLPassword: *auth.password, Insecure: *auth.insecure, Retention: *retention})
	if err != nil {
		return fmt.Errorf("broker: %w", auth.explain(err, "--listen"))
	}
	where := "in memory"
	if *dataDir != "" {
		where = "persisting to " + *dataDir
	}
	if *auth.user != "" {
		where += ", SASL " + broker.SASLMechanism + " as " + *auth.user
	}
	fmt.Fprintf(stdout, "braid broker listening on %s (%s); stop with Ctrl-C\n", b.Addr(), where)
	return b.Run(ctx)
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

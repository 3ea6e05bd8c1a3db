package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/braidstream/braid/runtime/broker"
)

func runBroker(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("broker", "braid broker [--listen 127.0.0.1:9092] [--data-dir DIR] [--partitions N]", stdout)
	listen := fs.String("listen", "127.0.0.1:9092", "host:port to listen on (loopback unless told otherwise)")
	dataDir := fs.String("data-dir", "", "directory to persist topics, records and offsets in; empty keeps them in memory")
	partitions := fs.Int("partitions", 4, "partition count of automatically created topics")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("broker: unexpected arguments %q", fs.Args())
	}
	b, err := broker.Start(broker.Config{Listen: *listen, DataDir: *dataDir, Partitions: *partitions, Logger: slog.Default()})
	if err != nil {
		return err
	}
	where := "in memory"
	if *dataDir != "" {
		where = "persisting to " + *dataDir
	}
	fmt.Fprintf(stdout, "braid broker listening on %s (%s); stop with Ctrl-C\n", b.Addr(), where)
	return b.Run(ctx)
}

package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/broker"
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
	fs := newFlagSet("serve", "braid serve [--listen 127.0.0.1:8080] [--data-dir DIR] [--auth-token TOKEN] [--broker-listen 127.0.0.1:9092]", stdout)
	listen := fs.String("listen", web.DefaultListen, "host:port of the web UI; a non-loopback address needs --auth-token")
	dataDir := fs.String("data-dir", "braid-data", "directory of the designs (DIR/designs) and the broker's data (DIR/broker)")
	token := fs.String("auth-token", os.Getenv("BRAID_AUTH_TOKEN"), "token every request must carry (default $BRAID_AUTH_TOKEN); required off loopback")
	brokerListen := fs.String("broker-listen", "127.0.0.1:9092", "host:port of the embedded Kafka-compatible broker; empty: run none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	if *dataDir == "" {
		return errors.New("serve: --data-dir must not be empty")
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
	}

	srv, err := web.New(web.Config{Listen: *listen, AuthToken: *token, Store: store, Logger: slog.Default()})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer srv.Close()

	var b *broker.Broker
	if *brokerListen != "" {
		b, err = broker.Start(broker.Config{Listen: *brokerListen, DataDir: filepath.Join(*dataDir, "broker"), Logger: slog.Default()})
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer b.Close()
	}

	fmt.Fprintf(stdout, "braid serve: the designer is at %s\n", srv.URL())
	if b != nil {
		fmt.Fprintf(stdout, "braid serve: embedded broker at %s\n", b.Addr())
	}
	fmt.Fprintf(stdout, "braid serve: data in %s; stop with Ctrl-C\n", *dataDir)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		errs[0] = srv.Listen(ctx)
	}()
	if b != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			errs[1] = b.Run(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
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

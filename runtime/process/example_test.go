package process_test

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/braidstream/braid/runtime/process"
	"github.com/braidstream/braid/runtime/streams"
)

// A program that runs a topology as braid run runs a design: braid run's
// flags, its instances reporting to the telemetry topic and obeying the
// control topic's signed commands, until SIGINT or SIGTERM.
func Example() {
	flags := process.DefineFlags(flag.CommandLine, "braid-word-copy", "application id")
	flag.Parse()
	b := streams.NewBuilder()
	b.Stream([]string{"words"}, streams.WithSerdes(streams.String, streams.String)).To("words-copy")
	topology, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := flags.Config()
	if err != nil {
		log.Fatal(err)
	}
	cfg.Runner.Out = os.Stdout
	cfg.Design = process.Design{ID: "word-copy", Name: "word copy"}
	proc, err := process.New(topology, cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := proc.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

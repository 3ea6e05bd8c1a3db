// Command braid runs Braid: the embedded Kafka-compatible broker, a demo
// topology, benchmarks against hand-written baselines, and the design
// tools (compile, import, export). It only
// parses flags and wires packages; the work lives in them.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	rprocess "github.com/braidstream/braid/runtime/process"
)

// command is one subcommand: its name, a line of help, and its runner.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout io.Writer) error
}

func commands() []command {
	return []command{
		{"broker", "run the embedded Kafka-compatible broker", runBroker},
		{"demo", "run the embedded broker and a demo topology fed by a generator", runDemo},
		{"gen", "produce generated JSON records to a topic (rate, keys, jitter, late records)", runGen},
		{"bench", "measure Braid against baselines (braid bench pipe)", runBench},
		{"serve", "serve the designer web UI with the embedded broker, and run deployments live", runServe},
		{"run", "run a design as instances of its application; processes with the same app id share its group", runRun},
		{"watch", "tail a deployment's live events and tasks in the terminal", runWatch},
		{"compile", "compile a design and print its topology, internal topics and stores", runCompile},
		{"import", "turn a Kafka Streams describe() text into a design", runImport},
		{"export", "write a design as a Go program that uses the runtime API", runExport},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "braid:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	slog.SetDefault(rprocess.Logger(stderr)) // as exported programs log
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return flag.ErrHelp
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout)
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Braid: design, run and watch fault-tolerant Kafka Streams-style topologies.")
	fmt.Fprintln(w, "\nUsage: braid <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'braid <command> --help' for a command's flags.")
}

// newFlagSet returns a flag set that prints its usage to stdout on --help.
// A bad flag or flag value prints nothing: parseFlags returns it as an
// error, which main prints once, with a hint at --help.
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package writes a parse error's message to the output,
	// then calls Usage: the message is kept from the user (the error
	// returned carries it) and tells Usage it was not --help.
	var failed bytes.Buffer
	fs.SetOutput(&failed)
	fs.Usage = func() {
		if failed.Len() > 0 {
			failed.Reset()
			return
		}
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
		fs.SetOutput(&failed)
	}
	return fs
}

// parseFlags parses args with fs: a bad flag or value comes back as a
// *flagError, which says where the flags are listed.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return &flagError{command: fs.Name(), err: err}
	}
	return err
}

// flagError is a bad flag or flag value of a command.
type flagError struct {
	command string
	err     error
}

func (e *flagError) Error() string {
	return fmt.Sprintf("%v\nRun 'braid %s --help' for its flags.", e.err, e.command)
}

func (e *flagError) Unwrap() error { return e.err }

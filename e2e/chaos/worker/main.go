// Command worker is one instance of the chaos test's application (see
// package chaos): it runs chaos.Topology with the runtime API until
// SIGTERM or SIGINT, then closes the App (commit, leave the group) and
// exits 0. On an error it exits 1 with the error on stderr. The chaos
// driver starts three of them and kills them with SIGKILL.
//
//	worker --brokers 127.0.0.1:9092 --app chaos --instance worker-1 \
//	       --state-dir DIR --guarantee exactly-once
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/braidstream/braid/e2e/chaos"
	"github.com/braidstream/braid/runtime/streams"
)

func main() {
	// BRAID_CHAOS_DEBUG=1 logs at debug level, franz-go's group and
	// transaction steps included: what a failed run's logs need to tell
	// which offsets a rewind went back to.
	level := slog.LevelInfo
	if os.Getenv("BRAID_CHAOS_DEBUG") != "" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], log)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, log *slog.Logger) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated bootstrap addresses")
	appID := fs.String("app", "chaos", "application id: the consumer group and the internal topics' prefix")
	instance := fs.String("instance", "", "stable instance id; a restarted worker takes its predecessor's (required)")
	stateDir := fs.String("state-dir", "", "directory of the tasks' local state (required)")
	guarantee := fs.String("guarantee", streams.ExactlyOnce.String(), "exactly-once or at-least-once")
	standbys := fs.Int("standbys", 1, "hot standby replicas of each stateful task")
	commitInterval := fs.Duration("commit-interval", 0, "commit interval; 0 keeps the runtime's default for the guarantee")
	sessionTimeout := fs.Duration("session-timeout", 3*time.Second, "group session timeout: how long a killed worker goes unnoticed")
	commitLog := fs.String("commit-log", "", "file to append a line to after every commit (see chaos.CommitLine); empty: none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *instance == "" || *stateDir == "" {
		return errors.New("--instance and --state-dir are required")
	}
	g, err := chaos.ParseGuarantee(*guarantee)
	if err != nil {
		return err
	}
	topo, err := chaos.Topology(*instance)
	if err != nil {
		return err
	}
	hooks := []streams.Hook{lateLogger{log.With("instance", *instance)}}
	if *commitLog != "" {
		f, err := os.OpenFile(*commitLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("opening the commit log: %w", err)
		}
		defer f.Close()
		hooks = append(hooks, commitLogger{f})
	}
	app, err := streams.New(topo, streams.Config{
		ApplicationID:       *appID,
		Brokers:             strings.Split(*brokers, ","),
		InstanceID:          *instance,
		StateDir:            *stateDir,
		ProcessingGuarantee: g,
		CommitInterval:      *commitInterval,
		SessionTimeout:      *sessionTimeout,
		StandbyReplicas:     *standbys,
		Hooks:               hooks,
		Logger:              log,
	})
	if err != nil {
		return fmt.Errorf("creating app: %w", err)
	}
	log.Info("chaos worker starting", "instance", *instance, "guarantee", g.String(), "pid", os.Getpid())
	if err := app.Run(ctx); err != nil {
		return fmt.Errorf("running app: %w", err)
	}
	log.Info("chaos worker stopped cleanly", "instance", *instance)
	return nil
}

// lateLogger logs every record dropped as late. The driver's event times
// only grow, so a late record means a window closed before its inputs were
// all processed, or a replay after a crash met windows already closed:
// the log tells which when a window count is wrong.
type lateLogger struct{ log *slog.Logger }

func (l lateLogger) OnLateRecordDropped(e streams.LateRecordEvent) {
	l.log.Warn("late record dropped", "task", e.Task.String(), "partition", e.Partition, "offset", e.Offset,
		"ts", e.Timestamp, "stream_time", e.StreamTime, "window_start", e.WindowStart)
}

// commitLogger appends a line per commit to a file, for the broker-faults
// scenario to time each worker's resume. Each line is one write to a file
// opened for appending, so a kill leaves whole lines.
type commitLogger struct{ f *os.File }

func (l commitLogger) OnCommit(e streams.CommitEvent) {
	_, _ = l.f.WriteString(chaos.CommitLine(time.Now(), e.Took))
}

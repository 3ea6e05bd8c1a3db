package process

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/control"
	"github.com/braidstream/braid/runtime/streams"
)

func startBroker(t *testing.T) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func copyTopology(t *testing.T) *streams.Topology {
	t.Helper()
	bld := streams.NewBuilder()
	bld.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.String)).To("out")
	topo, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// closeCounter counts the clients closed that were made with it.
type closeCounter struct{ n atomic.Int64 }

func (c *closeCounter) OnClientClosed(*kgo.Client) { c.n.Add(1) }

// TestRunEndingBeforeTheTopicsClosesItsClients: a Run stopped while it
// waits for a source topic returns nil and closes every client the
// Process made, the Publisher's and the Listener's among them, though
// neither ran.
func TestRunEndingBeforeTheTopicsClosesItsClients(t *testing.T) {
	b := startBroker(t)
	closed := &closeCounter{}
	p, err := New(copyTopology(t), Config{TelemetryTopic: "telemetry", Runner: streams.RunnerConfig{InstanceID: "i1",
		Config: streams.Config{ApplicationID: "copy", Brokers: b.Addrs(), StateDir: t.TempDir(), ClientOptions: []kgo.Opt{kgo.WithHooks(closed)}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not end within a minute of its context")
	}
	// Prepare's own client, the Publisher's and the Listener's, all
	// closed before Run returned.
	if n := closed.n.Load(); n != 3 {
		t.Errorf("%d clients closed, want 3: Prepare's, the Publisher's and the Listener's", n)
	}
}

// TestCrashCommandExitsTheProcess: a signed crash command for the only
// instance of a process ends it with CrashExitCode, saying so; Run is
// not asked to stop first.
func TestCrashCommandExitsTheProcess(t *testing.T) {
	code, stderr, _ := exitByCommand(t, control.Crash)
	if code != CrashExitCode {
		t.Errorf("exit code %d, want %d", code, CrashExitCode)
	}
	if !strings.Contains(stderr, "instance i1 crashed by a command") {
		t.Errorf("stderr %q does not say why the process exits", stderr)
	}
}

// TestCrashWipeCommandWipesAndExits: a signed crash-wipe command for the
// only instance of a process deletes the instance's state dir and ends
// the process with WipeExitCode, saying so, for whoever started it to
// start it again with no state.
func TestCrashWipeCommandWipesAndExits(t *testing.T) {
	code, stderr, dir := exitByCommand(t, control.CrashWipe)
	if code != WipeExitCode {
		t.Errorf("exit code %d, want %d", code, WipeExitCode)
	}
	if !strings.Contains(stderr, "instance i1 crashed and its state dir") {
		t.Errorf("stderr %q does not say why the process exits", stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state dir %s after a crash-wipe: %v, want it gone", dir, err)
	}
}

// exitByCommand runs a process of one instance, i1, with a file in its
// state dir, sends it verb until it exits, and returns the exit code,
// what it wrote to stderr and its instance's state dir.
func exitByCommand(t *testing.T, verb string) (code int, stderr string, stateDir string) {
	t.Helper()
	b := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if _, err := kadm.NewClient(cl).CreateTopics(context.Background(), 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	secret := []byte("s3cret")
	exited := make(chan int, 1)
	var out strings.Builder
	p, err := New(copyTopology(t), Config{ControlSecret: secret, Stderr: &out,
		Exit: func(code int) {
			select {
			case exited <- code:
			default:
			}
		},
		Runner: streams.RunnerConfig{InstanceID: "i1", Config: streams.Config{ApplicationID: "copy", Brokers: b.Addrs(), StateDir: t.TempDir()}}})
	if err != nil {
		t.Fatal(err)
	}
	stateDir = p.Runner().Supervisor().StateDir("i1")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "kept"), []byte("state"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	s, err := control.NewSender(control.SenderConfig{Brokers: b.Addrs(), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	// The Listener starts at the topic's end, once the topics are
	// there: send until it hears one.
	guard := time.After(time.Minute)
	for {
		if err := s.Send(context.Background(), "copy", "i1", verb); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-exited:
			return code, out.String(), stateDir
		case <-time.After(200 * time.Millisecond): // a resend interval, not a margin
		case <-guard:
			t.Fatalf("no exit within a minute of %s commands", verb)
		}
	}
}

// TestFlags: the flags give the Runner's config, the topics and the
// secret from its file; wrong values are all named at once.
func TestFlags(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("p", flag.ContinueOnError)
	f := DefineFlags(fs, "app", "application id")
	if err := fs.Parse([]string{"--instance-id", "i1", "--telemetry-topic", "", "--control-topic", "ctl", "--control-secret-file", secretFile, "--replication-factor", "2"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runner.Config.ApplicationID != "app" || cfg.Runner.InstanceID != "i1" || cfg.TelemetryTopic != "" ||
		cfg.ControlTopic != "ctl" || string(cfg.ControlSecret) != "s3cret" || cfg.Runner.Config.ReplicationFactor != 2 {
		t.Errorf("config %+v", cfg)
	}

	fs = flag.NewFlagSet("p", flag.ContinueOnError)
	f = DefineFlags(fs, "app", "application id")
	missing := filepath.Join(t.TempDir(), "nope")
	if err := fs.Parse([]string{"--guarantee", "maybe", "--control-secret-file", missing, "--replication-factor", "-1"}); err != nil {
		t.Fatal(err)
	}
	_, err = f.Config()
	for _, want := range []string{"--guarantee", "--control-secret-file", missing, "--replication-factor -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Config: %v, want it to name %s", err, want)
		}
	}
}

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/control"
	"github.com/braidstream/braid/telemetry"
)

// TestExportedProgramJoinsRunProcesses: a program built from `braid
// export -o` and a `braid run` process of the same design share one
// group on one broker; both report on the telemetry topic, so that a
// Reader shows the application with both instances and every task
// between them; and a signed crash command makes the exported program
// exit at once with status 3, as braid run does.
func TestExportedProgramJoinsRunProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program; skipped with -short")
	}
	demo := readDemoTopics(t)
	addr, _, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 4)
	secretFile := filepath.Join(t.TempDir(), "control-secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := buildExportedDemo(t)

	m := monitor.New(monitor.Options{PublishInterval: 50 * time.Millisecond})
	designs := make(chan monitor.DeploymentInfo, 16)
	reader, err := telemetry.NewReader(telemetry.ReaderConfig{Brokers: []string{addr}, Monitor: m,
		OnDesign: func(info monitor.DeploymentInfo, _ []byte) {
			select {
			case designs <- info:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	monDone, readDone := make(chan error, 1), make(chan error, 1)
	go func() { monDone <- m.Run(ctx) }()
	go func() { readDone <- reader.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-monDone
		<-readDone
	})

	exported := launchCommand(t, exec.Command(filepath.Join(dir, "program"), "--brokers", addr, "--instance-id", "exported",
		"--state-dir", filepath.Join(t.TempDir(), "exported"), "--control-secret-file", secretFile))
	run := launchProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", "run",
		"--state-dir", filepath.Join(t.TempDir(), "run"), "--control-secret-file", secretFile)
	for _, p := range []*process{exported, run} {
		p.waitLine(t, func(line string) bool { return strings.Contains(line, "stop with Ctrl-C") })
	}
	waitForGroup(t, adm, demo)

	active := func(in monitor.Instance) int {
		n := 0
		for _, task := range in.Tasks {
			if task.Role == "active" {
				n++
			}
		}
		return n
	}
	waitUntil(t, time.Minute, "both instances on the Reader's monitor, with the 8 tasks between them", func() bool {
		for _, d := range m.Snapshot().Deployments {
			if d.ID != demo.appID || len(d.Instances) != 2 {
				continue
			}
			mine := map[string]int{}
			for _, in := range d.Instances {
				mine[in.ID] = active(in)
			}
			return mine["exported"] > 0 && mine["run"] > 0 && mine["exported"]+mine["run"] == 8
		}
		return false
	})
	// Both log in one format, slog's text handler (process.Logger).
	logDate := regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d `)
	for name, p := range map[string]*process{"the exported program": exported, "braid run": run} {
		if out := p.out.String(); !strings.Contains(out, " level=INFO msg=") || logDate.MatchString(out) {
			t.Errorf("%s does not log as slog's text handler does:\n%s", name, out)
		}
	}
	select {
	case info := <-designs:
		if info.ApplicationID != demo.appID || info.DesignName != "orders-demo" {
			t.Errorf("the design came with %+v, want application %s of design orders-demo", info, demo.appID)
		}
	default:
		t.Error("the Reader got no design from the processes' reports")
	}

	sender, err := control.NewSender(control.SenderConfig{Brokers: []string{addr}, Secret: []byte("s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sender.Close)
	go func() {
		for range exported.lines { // drain, so that the program never blocks writing
		}
	}()
	// The program's Listener reads from the topic's end from when it
	// started: a command sent before it is ready is missed, so send
	// until it exits.
	guard := time.After(time.Minute)
	var exit error
	for sent := false; !sent; {
		if err := sender.Send(context.Background(), demo.appID, "exported", control.Crash); err != nil {
			t.Fatal(err)
		}
		select {
		case exit = <-exported.done:
			sent = true
		case <-time.After(500 * time.Millisecond): // a resend interval, not a margin
		case <-guard:
			t.Fatalf("the exported program still runs a minute into crash commands:\n%s", exported.out.String())
		}
	}
	var ee *exec.ExitError
	if !errors.As(exit, &ee) || ee.ExitCode() != 3 {
		t.Errorf("the exported program ended with %v, want exit status 3:\n%s", exit, exported.out.String())
	}
	if !strings.Contains(exported.out.String(), "instance exported crashed by a command from the server") {
		t.Errorf("the exported program does not say why it exits:\n%s", exported.out.String())
	}
	run.terminate(t)
}

package streams_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestRunnerFlagsSnapshots: --snapshots, --snapshot-interval and
// --snapshot-records make Config.Snapshots, and a wrong value is an error
// naming its flag.
func TestRunnerFlagsSnapshots(t *testing.T) {
	parse := func(args ...string) (streams.RunnerConfig, error) {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := streams.DefineRunnerFlags(fs, "app", "application id")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.Config()
	}
	cfg, err := parse("--snapshots", "file:///var/snapshots", "--snapshot-interval", "30s", "--snapshot-records", "500")
	if err != nil {
		t.Fatal(err)
	}
	want := streams.SnapshotConfig{URL: "file:///var/snapshots", Interval: 30 * time.Second, Records: 500}
	if cfg.Config.Snapshots != want {
		t.Errorf("Config.Snapshots = %+v, want %+v", cfg.Config.Snapshots, want)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--snapshots", "http://blobs"}, "--snapshots"},
		{[]string{"--snapshot-interval", "-1s"}, "--snapshot-interval -1s is negative"},
		{[]string{"--snapshot-records", "-2"}, "--snapshot-records -2 is negative"},
	} {
		if _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

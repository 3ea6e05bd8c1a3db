package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestRunFailover runs the failover benchmark at a tiny size: every run
// completes, every task the crashed instance ran is reported once, moved
// to another instance, from its standby or, in the run without one, from
// nothing; the tasks that stayed are measured, the exactly-once run's
// reader received new results, and the report ends with the RESULT line.
func TestRunFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two crashes with session timeouts")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := RunFailover(ctx, FailoverOptions{
		Records:        20_000,
		Keys:           2_000,
		Partitions:     4,
		SessionTimeout: 1500 * time.Millisecond,
		Rate:           2_000,
		// Each task's changelog holds about 5,000 records, below the
		// default 10,000 at which every instance counts as caught up.
		AcceptableRecoveryLag: 1_000,
		Timeout:               30 * time.Second,
		SetupTimeout:          30 * time.Second,
		Out:                   &out,
	})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []FailoverRun{rep.Standby, rep.Eager, rep.NoStandby, rep.ExactlyOnce} {
		if len(run.Moved) == 0 || len(run.Tasks) != len(run.Moved) {
			t.Fatalf("%s: %d tasks moved, %d failover events", standbyLabel(run.Standbys), len(run.Moved), len(run.Tasks))
		}
		if run.Changelog < 20_000 {
			t.Errorf("%s: changelog held %d records at the crash, want at least 20,000", standbyLabel(run.Standbys), run.Changelog)
		}
		for i, ev := range run.Tasks {
			if ev.Task != run.Moved[i] || ev.From != FailoverVictim || ev.To == FailoverVictim || ev.Cause != "crash" {
				t.Errorf("%s: event %d = task %s %s -> %s (%s), want task %s off %s", standbyLabel(run.Standbys), i, ev.Task, ev.From, ev.To, ev.Cause, run.Moved[i], FailoverVictim)
			}
			if ev.Detection <= 0 || ev.Recovery <= 0 || ev.Downtime <= 0 {
				t.Errorf("%s: task %s: detection %v, recovery %v, downtime %v, want all positive", standbyLabel(run.Standbys), ev.Task, ev.Detection, ev.Recovery, ev.Downtime)
			}
			want := "standby"
			if run.Standbys == 0 {
				want = ""
			}
			if ev.FromReplica != want {
				t.Errorf("%s: task %s resumed from replica %q, want %q", standbyLabel(run.Standbys), ev.Task, ev.FromReplica, want)
			}
		}
		if run.Recovery.Max < run.Recovery.Median || run.Downtime.Max < run.Downtime.Median {
			t.Errorf("%s: max below median: %+v %+v", standbyLabel(run.Standbys), run.Recovery, run.Downtime)
		}
		if len(run.Stayed)+len(run.Traded)+len(run.Moved) != 4 || run.StayedGap <= 0 || run.QuietGap <= 0 {
			t.Errorf("%s: %d tasks stayed, %d were traded between survivors and %d moved of 4, longest gap of those that stayed %v (before the crash %v)", run.FailoverSpec, len(run.Stayed), len(run.Traded), len(run.Moved), run.StayedGap, run.QuietGap)
		}
	}
	if rep.ExactlyOnce.Guarantee != streams.ExactlyOnce || rep.ExactlyOnce.ReaderStall <= 0 || rep.Standby.ReaderStall != 0 {
		t.Errorf("reader stall %v under %v, %v under %v: want it measured under exactly-once only",
			rep.ExactlyOnce.ReaderStall, rep.ExactlyOnce.Guarantee, rep.Standby.ReaderStall, rep.Standby.Guarantee)
	}
	if rep.Eager.Protocol != streams.RebalanceEager || rep.Standby.Protocol != streams.RebalanceCooperative {
		t.Errorf("protocols %v and %v, want eager and cooperative", rep.Eager.Protocol, rep.Standby.Protocol)
	}
	if rep.NoStandby.Restored <= rep.Standby.Restored {
		t.Errorf("restored %d records without standbys, %d with: want more without", rep.NoStandby.Restored, rep.Standby.Restored)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "RESULT failover ratio=") ||
		!strings.Contains(last, " standby_recovery_max_ms=") || !strings.Contains(last, " nostandby_recovery_max_ms=") ||
		!strings.Contains(last, " standby_downtime_max_ms=") || !strings.Contains(last, " stayed_gap_max_ms=") ||
		!strings.Contains(last, " eager_stayed_gap_max_ms=") || !strings.Contains(last, " detection_max_ms=") ||
		!strings.Contains(last, " session_timeout_ms=1500 ") || !strings.Contains(last, " eos_reader_stall_ms=") || !strings.Contains(last, " quiet_gap_max_ms=") {
		t.Errorf("last line %q, want the RESULT line", last)
	}
}

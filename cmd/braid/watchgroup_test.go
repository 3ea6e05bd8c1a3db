package main

import (
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/monitor"
)

// TestEventGrouper: forty late drops of one task and window print two
// lines (the first, then one with the count), a failover between them
// prints at once, and another window is a group of its own.
func TestEventGrouper(t *testing.T) {
	var out strings.Builder
	g := newEventGrouper(&out)
	start := time.UnixMilli(1_700_000_000_000)
	g.lastFlush = start
	late := func(i int, window, suppressed int64) *monitor.Event {
		d := monitor.LateDropDetail{Store: "per-10s", WindowStart: window, WindowEnd: window + 10000, Suppressed: suppressed}
		return &monitor.Event{Seq: uint64(i), Time: start.UnixMilli() + int64(i), Deployment: "d", Instance: "instance-1", Task: "1_0",
			Kind: "late-drop", Message: "record dropped", Detail: d}
	}
	for i := range 30 {
		g.event(late(i, 1_700_000_000_000, 0))
		g.tick(start.Add(time.Duration(i) * time.Millisecond))
	}
	g.event(&monitor.Event{Time: start.UnixMilli() + 31, Deployment: "d", Instance: "instance-2", Task: "0_1", Kind: "task-failed-over", Message: "0_1 moved"})
	g.event(late(32, 1_700_000_000_000, 9)) // and 9 the monitor did not send
	g.event(late(33, 1_700_000_010_000, 0))
	g.tick(start.Add(lateGroupFlush))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4 (first late drop, failover, other window's one, the first window's count):\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], "record dropped") || !strings.Contains(lines[1], "task-failed-over") || !strings.Contains(lines[2], "record dropped") {
		t.Errorf("the first late drop, the failover and the other window's drop are not printed as they came:\n%s", out.String())
	}
	if !strings.Contains(lines[3], "late record dropped ×40 — task 1_0, window [") || !strings.Contains(lines[3], "of per-10s") {
		t.Errorf("no count line for the first window:\n%s", out.String())
	}
	if strings.Contains(out.String(), "×1 ") {
		t.Errorf("a group of one printed a count line:\n%s", out.String())
	}
	// Nothing new: no more lines; the quiet groups are forgotten later.
	n := out.Len()
	g.tick(start.Add(2 * lateGroupFlush))
	g.tick(start.Add(5 * lateGroupFlush))
	if out.Len() != n || len(g.groups) != 0 {
		t.Errorf("quiet groups printed again or kept: %d groups\n%s", len(g.groups), out.String()[n:])
	}
}

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/braidstream/braid/monitor"
)

// lateGroupFlush is how often braid watch prints the counts of the late
// drops it grouped.
const lateGroupFlush = 2 * time.Second

// eventGrouper prints a deployment's events for braid watch with the late
// drops of one task and window grouped: the first is printed as it comes,
// the later ones are counted and printed as one line with the count
// ("late record dropped ×37 — task 1_0, window [..]") every
// lateGroupFlush, so that they do not bury the rare events (failovers,
// rebalances, restores), which are printed as they come.
type eventGrouper struct {
	w         io.Writer
	groups    map[lateKey]*lateGroup
	order     []lateKey
	lastFlush time.Time
}

type lateKey struct{ deployment, instance, task, store, window string }

type lateGroup struct {
	first   *monitor.Event
	last    int64 // time of the last event, unix ms
	count   int64 // events counted, the monitor's suppressed ones too
	printed int64 // count at the last line printed
}

func newEventGrouper(w io.Writer) *eventGrouper {
	return &eventGrouper{w: w, groups: map[lateKey]*lateGroup{}}
}

// event prints or counts one event.
func (g *eventGrouper) event(ev *monitor.Event) {
	if ev.Kind != "late-drop" {
		printEvent(g.w, ev)
		return
	}
	d, ok := ev.Detail.(monitor.LateDropDetail)
	n := 1 + max(d.Suppressed, 0)
	k := lateKey{ev.Deployment, ev.Instance, ev.Task, d.Store, "?"}
	if ok {
		k.window = windowOf(d)
	}
	if grp := g.groups[k]; grp != nil {
		grp.count += n
		grp.last = ev.Time
		return
	}
	g.groups[k] = &lateGroup{first: ev, last: ev.Time, count: n, printed: n}
	g.order = append(g.order, k)
	printEvent(g.w, ev)
}

// tick prints, at most every lateGroupFlush, one line per group that
// counted more since its last line, and forgets the groups that have been
// quiet since the flush before.
func (g *eventGrouper) tick(now time.Time) {
	if now.Sub(g.lastFlush) < lateGroupFlush {
		return
	}
	g.flush(now)
}

func (g *eventGrouper) flush(now time.Time) {
	keep := g.order[:0]
	for _, k := range g.order {
		grp := g.groups[k]
		if grp.count > grp.printed {
			ev := *grp.first
			ev.Time = grp.last
			ev.Message = fmt.Sprintf("late record dropped ×%d — task %s, window %s of %s", grp.count, ev.Task, k.window, k.store)
			printEvent(g.w, &ev)
			grp.printed = grp.count
			keep = append(keep, k)
			continue
		}
		if now.UnixMilli()-grp.last < 2*lateGroupFlush.Milliseconds() {
			keep = append(keep, k)
			continue
		}
		delete(g.groups, k)
	}
	g.order = keep
	g.lastFlush = now
}

// windowOf writes a late drop's window as [start – end).
func windowOf(d monitor.LateDropDetail) string {
	f := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05") }
	return "[" + f(d.WindowStart) + " – " + f(d.WindowEnd) + ")"
}

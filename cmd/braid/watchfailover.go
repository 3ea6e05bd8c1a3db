package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/braidstream/braid/monitor"
)

// failoverPrinter prints each failover of a deployment once it is done,
// as a compact text timeline (printTimeline). The failovers done before
// its first snapshot are old news: it prints none of those.
type failoverPrinter struct {
	w       io.Writer
	started bool
	printed map[string]bool // by timeline id and start
}

func newFailoverPrinter(w io.Writer) *failoverPrinter {
	return &failoverPrinter{w: w, printed: map[string]bool{}}
}

// snapshot prints the deployment's failovers done since the last one.
func (p *failoverPrinter) snapshot(d *monitor.Deployment) {
	for _, tl := range d.Timelines {
		key := fmt.Sprintf("%s@%d", tl.ID, tl.At)
		if !tl.Done || p.printed[key] {
			continue
		}
		p.printed[key] = true
		if p.started {
			printTimeline(p.w, tl)
		}
	}
	p.started = true
}

// printTimeline prints a failover: a head line (cause, instance, when,
// how long, the session timeout, the tasks that kept running), then one
// line per moved task with its phases and their durations, and the
// failover table's numbers.
func printTimeline(w io.Writer, tl monitor.FailoverTimeline) {
	what := map[string]string{"crash": "crash of", "stop": "stop of", "instance-added": "added instance", "probing": "probing move to"}[tl.Cause]
	if what == "" {
		what = tl.Cause
	}
	fmt.Fprintf(w, "%s failover %s: %s %s, %d tasks moved in %d ms (session timeout %d ms)", clockMs(tl.At), tl.ID, what, tl.Instance,
		len(tl.Tasks), tl.End-tl.At, tl.SessionTimeoutMs)
	if len(tl.Unmoved) > 0 {
		fmt.Fprintf(w, "; kept running: %s", strings.Join(tl.Unmoved, " "))
	}
	fmt.Fprintln(w)
	for _, l := range tl.Tasks {
		fmt.Fprintf(w, "   %-5s %s -> %s%s: %s%s\n", l.Task, l.From, l.To, replicaText(l), phasesText(l.Phases), numbersText(l))
	}
}

// replicaText says what the new owner held.
func replicaText(l monitor.TaskLane) string {
	switch {
	case l.Replica == "":
		return ""
	case l.StandbyLag >= 0:
		return fmt.Sprintf(" (its %s, %d records behind)", l.Replica, l.StandbyLag)
	}
	return " (its " + l.Replica + ")"
}

// phasesText writes the phases between the first and the last, each with
// its duration, and "processing" when the lane ends processing.
func phasesText(ps []monitor.Phase) string {
	var parts []string
	for i, p := range ps {
		switch {
		case i == 0 && p.Kind == monitor.PhaseProcessing:
			continue
		case i == len(ps)-1 && p.Kind == monitor.PhaseProcessing:
			parts = append(parts, "processing")
		default:
			parts = append(parts, fmt.Sprintf("%s %d ms", p.Kind, p.End-p.Start))
		}
	}
	return strings.Join(parts, " > ")
}

// numbersText writes a lane's failover numbers, those of the failover
// table, and what it restored.
func numbersText(l monitor.TaskLane) string {
	if l.DowntimeMs < 0 {
		return " (not measured: overtaken by another failover)"
	}
	s := fmt.Sprintf(" (detection %d ms, recovery %d ms, downtime %d ms", l.DetectionMs, l.RecoveryMs, l.DowntimeMs)
	if l.Restored > 0 {
		s += fmt.Sprintf(", restored %d records", l.Restored)
		if l.RestoreRate > 0 {
			s += fmt.Sprintf(" at %.0f/s", l.RestoreRate)
		}
	}
	return s + ")"
}

func clockMs(ms int64) string { return time.UnixMilli(ms).Format("15:04:05.000") }

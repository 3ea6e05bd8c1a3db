package monitor

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// family is one metric of the exposition: its name, help, type and
// samples.
type family struct {
	name, help, typ string
	samples         []metricSample
}

type metricSample struct {
	labels string // rendered, with braces
	value  float64
}

// The families WriteMetrics writes, in this order.
const (
	mProcessed        = iota // braid_records_processed_total
	mLateDropped             // braid_records_dropped_late_total
	mLateness                // braid_record_lateness_ms
	mStreamTime              // braid_stream_time_ms
	mConsumerLag             // braid_consumer_lag_records
	mRestoreLeft             // braid_restore_remaining_records
	mStandbyLag              // braid_standby_lag_records
	mStandbyLagMs            // braid_standby_lag_ms
	mCommitLatency           // braid_commit_latency_ms
	mFailovers               // braid_failovers_total
	mFailoverDowntime        // braid_failover_downtime_ms
	numFamilies
)

func newFamilies() []family {
	f := make([]family, numFamilies)
	f[mProcessed] = family{name: "braid_records_processed_total", typ: "counter",
		help: "Records an active task took from its input partitions on this instance."}
	f[mLateDropped] = family{name: "braid_records_dropped_late_total", typ: "counter",
		help: "Records a windowed store dropped because their window had closed (once per window)."}
	f[mLateness] = family{name: "braid_record_lateness_ms", typ: "gauge",
		help: "Stream time minus the timestamp of the last record dropped as late."}
	f[mStreamTime] = family{name: "braid_stream_time_ms", typ: "gauge",
		help: "A task's stream time: the largest record timestamp it processed, in ms since the epoch."}
	f[mConsumerLag] = family{name: "braid_consumer_lag_records", typ: "gauge",
		help: "Records in a task's input partitions not processed yet (end offset minus position)."}
	f[mRestoreLeft] = family{name: "braid_restore_remaining_records", typ: "gauge",
		help: "Changelog records a store still has to restore before its task processes."}
	f[mStandbyLag] = family{name: "braid_standby_lag_records", typ: "gauge",
		help: "Changelog records a standby or warm-up replica's store has not applied yet."}
	f[mStandbyLagMs] = family{name: "braid_standby_lag_ms", typ: "gauge",
		help: "How far behind in time a standby or warm-up replica's store is."}
	f[mCommitLatency] = family{name: "braid_commit_latency_ms", typ: "gauge",
		help: "Duration of an instance's last commit (flush and commit)."}
	f[mFailovers] = family{name: "braid_failovers_total", typ: "counter",
		help: "Tasks that failed over off an instance (labelled with the instance that failed)."}
	f[mFailoverDowntime] = family{name: "braid_failover_downtime_ms", typ: "gauge",
		help: "How long a task was processed nowhere during its last failover."}
	return f
}

// WriteMetrics writes the deployments' metrics in the Prometheus text
// exposition format 0.0.4. Every series is labelled with its deployment,
// and with instance, task and store where they apply.
func (m *Monitor) WriteMetrics(w io.Writer) error {
	fams := newFamilies()
	m.mu.Lock()
	for _, d := range m.deps {
		d.metrics(fams)
	}
	m.mu.Unlock()
	bw := bufio.NewWriter(w)
	for i := range fams {
		f := &fams[i]
		slices.SortFunc(f.samples, func(x, y metricSample) int { return strings.Compare(x.labels, y.labels) })
		bw.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n")
		bw.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
		for _, s := range f.samples {
			bw.WriteString(f.name + s.labels + " " + formatValue(s.value) + "\n")
		}
	}
	return bw.Flush()
}

// metrics adds d's samples to fams. The caller holds the Monitor's mu.
func (d *deployment) metrics(fams []family) {
	add := func(f int, v float64, kv ...string) {
		fams[f].samples = append(fams[f].samples, metricSample{labels: labels(append([]string{"deployment", d.info.ID}, kv...)), value: v})
	}
	for _, id := range d.order {
		in := d.instances[id]
		if !in.lastCommit.IsZero() {
			add(mCommitLatency, float64(in.commitTook.Microseconds())/1000, "instance", id)
		}
		for _, ts := range in.info.Stats.Tasks {
			task := ts.ID.String()
			t := in.task(ts.ID)
			add(mProcessed, float64(ts.Processed), "instance", id, "task", task)
			if st := max(ts.StreamTime, t.streamTime); st >= 0 {
				add(mStreamTime, float64(st), "instance", id, "task", task)
			}
			if lag := taskLag(ts); lag >= 0 {
				add(mConsumerLag, float64(lag), "instance", id, "task", task)
			}
			for store, r := range t.restores {
				add(mRestoreLeft, float64(max(0, r.end-r.start-r.restored)), "instance", id, "task", task, "store", store)
			}
		}
		for _, sb := range in.info.Stats.Standbys {
			task := sb.ID.String()
			for _, st := range sb.Stores {
				add(mStandbyLag, float64(st.Lag), "instance", id, "task", task, "store", st.Name)
				add(mStandbyLagMs, float64(st.TimeLag.Milliseconds()), "instance", id, "task", task, "store", st.Name)
			}
		}
	}
	for k, l := range d.late {
		add(mLateDropped, float64(l.drops), "instance", k.instance, "task", k.task.String(), "store", k.store)
		add(mLateness, float64(l.lateness), "instance", k.instance, "task", k.task.String(), "store", k.store)
	}
	for k, n := range d.failoverCounts {
		add(mFailovers, float64(n), "instance", k.from, "task", k.task)
	}
	for task, ms := range d.lastDowntime {
		add(mFailoverDowntime, float64(ms), "task", task)
	}
}

// labels renders label pairs as {k="v",...}, escaping the values.
func labels(kv []string) string {
	var sb strings.Builder
	sb.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(kv[i])
		sb.WriteString(`="`)
		sb.WriteString(escapeLabel(kv[i+1]))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10) // stream times in full
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

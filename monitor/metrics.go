package monitor

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// The families the collector exports, indexes into descs.
const (
	mProcessed         = iota // braid_records_processed_total
	mLateDropped              // braid_records_dropped_late_total
	mLateness                 // braid_record_lateness_ms
	mStreamTime               // braid_stream_time_ms
	mConsumerLag              // braid_consumer_lag_records
	mRestoreLeft              // braid_restore_remaining_records
	mStandbyLag               // braid_standby_lag_records
	mStandbyLagMs             // braid_standby_lag_ms
	mCommitLatency            // braid_commit_latency_ms
	mFailovers                // braid_failovers_total
	mFailoverDowntime         // braid_failover_downtime_ms
	mBrokerUnreachable        // braid_broker_unreachable_seconds
	mSnapshots                // braid_snapshots_total
	mSnapshotsFailed          // braid_snapshots_failed_total
	mSnapshotBytes            // braid_snapshot_bytes
	mSnapshotTime             // braid_snapshot_time_ms
	mRestores                 // braid_restores_total
	numFamilies
)

// family is one metric the collector exports: its description and
// whether it is a counter or a gauge.
type family struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

// Each family has a fixed set of labels, the deployment first; a series
// gives their values in this order.
var (
	labelsInstance = []string{"deployment", "instance"}
	labelsTask     = []string{"deployment", "instance", "task"}
	labelsStore    = []string{"deployment", "instance", "task", "store"}
	labelsFailover = []string{"deployment", "task"}
	labelsBroker   = []string{"deployment", "instance", "broker"}
	labelsRestore  = []string{"deployment", "instance", "task", "store", "source"}
)

// families are built once, so that a scrape does not rebuild them and
// Describe and Collect send the same descriptions.
var families = func() [numFamilies]family {
	var f [numFamilies]family
	def := func(i int, name string, typ prometheus.ValueType, labels []string, help string) {
		f[i] = family{desc: prometheus.NewDesc(name, help, labels, nil), typ: typ}
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	def(mProcessed, "braid_records_processed_total", counter, labelsTask,
		"Records an active task took from its input partitions on this instance.")
	def(mLateDropped, "braid_records_dropped_late_total", counter, labelsStore,
		"Records a windowed store dropped because their window had closed (once per window).")
	def(mLateness, "braid_record_lateness_ms", gauge, labelsStore,
		"Stream time minus the timestamp of the last record dropped as late.")
	def(mStreamTime, "braid_stream_time_ms", gauge, labelsTask,
		"A task's stream time: the largest record timestamp it processed, in ms since the epoch.")
	def(mConsumerLag, "braid_consumer_lag_records", gauge, labelsTask,
		"Records in a task's input partitions not processed yet (end offset minus position).")
	def(mRestoreLeft, "braid_restore_remaining_records", gauge, labelsStore,
		"Changelog records a store still has to restore before its task processes.")
	def(mStandbyLag, "braid_standby_lag_records", gauge, labelsStore,
		"Changelog records a standby or warm-up replica's store has not applied yet.")
	def(mStandbyLagMs, "braid_standby_lag_ms", gauge, labelsStore,
		"How far behind in time a standby or warm-up replica's store is.")
	def(mCommitLatency, "braid_commit_latency_ms", gauge, labelsInstance,
		"Duration of an instance's last commit (flush and commit).")
	def(mFailovers, "braid_failovers_total", counter, labelsTask,
		"Tasks that failed over off an instance (labelled with the instance that failed).")
	def(mFailoverDowntime, "braid_failover_downtime_ms", gauge, labelsFailover,
		"How long a task was processed nowhere during its last failover.")
	def(mBrokerUnreachable, "braid_broker_unreachable_seconds", gauge, labelsBroker,
		"How long a broker the instance cannot reach now has not answered it; no series while it answers.")
	def(mSnapshots, "braid_snapshots_total", counter, labelsStore,
		"Snapshots of a store taken and uploaded to the blob store (streams.Config.Snapshots).")
	def(mSnapshotsFailed, "braid_snapshots_failed_total", counter, labelsStore,
		"Snapshots of a store that failed; the store carries on without them.")
	def(mSnapshotBytes, "braid_snapshot_bytes", gauge, labelsStore,
		"Bytes uploaded by a store's last snapshot.")
	def(mSnapshotTime, "braid_snapshot_time_ms", gauge, labelsStore,
		"When a store's last snapshot was taken, in ms since the epoch: its age is the scrape's time minus it.")
	def(mRestores, "braid_restores_total", counter, labelsRestore,
		"Restores of a store finished, by where its state came from: source=\"snapshot\" (a snapshot, then the changelog's tail) or \"changelog\" (the changelog only).")
	return f
}()

// Collector returns a prometheus.Collector of the deployments' metrics.
// Every series is labelled with its deployment, and with instance, task
// and store where they apply. It reads the state the hooks and the last
// sample left when it is collected: nothing is counted per record for
// it, so the runtime's hot paths pay nothing for being scraped.
//
// Register it in a registry of the caller's own; a second Monitor's
// collector in the same registry would collide with the first's names.
func (m *Monitor) Collector() prometheus.Collector { return promCollector{m} }

// WriteMetrics writes the deployments' metrics (those of Collector) in
// the Prometheus text exposition format 0.0.4. It writes nothing when
// they cannot be gathered.
func (m *Monitor) WriteMetrics(w io.Writer) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(m.Collector()); err != nil {
		return fmt.Errorf("registering the monitor's collector: %w", err)
	}
	return WriteGathered(w, reg)
}

// WriteGathered writes what g gathers in the text exposition format
// 0.0.4 (ContentType). It gathers everything before it writes anything,
// so that an error can still be answered with an error status.
func WriteGathered(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gathering metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.FmtText)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encoding metric %s: %w", mf.GetName(), err)
		}
	}
	return nil
}

// ContentType is the Content-Type of what WriteMetrics and WriteGathered
// write.
const ContentType = string(expfmt.FmtText)

// promCollector is a Monitor's prometheus.Collector.
type promCollector struct{ m *Monitor }

func (c promCollector) Describe(ch chan<- *prometheus.Desc) {
	for i := range families {
		ch <- families[i].desc
	}
}

// Collect copies the samples out under the Monitor's mu and sends them
// after unlocking it: the registry reads ch from another goroutine, and a
// slow gatherer must not hold up the hooks, which take mu.
func (c promCollector) Collect(ch chan<- prometheus.Metric) {
	var samples []series
	c.m.mu.Lock()
	for _, d := range c.m.deps {
		samples = d.metrics(samples)
	}
	c.m.mu.Unlock()
	for _, s := range samples {
		f := &families[s.family]
		metric, err := prometheus.NewConstMetric(f.desc, f.typ, s.value, s.labels...)
		if err != nil {
			// Only a wrong label count can fail (values are made valid
			// UTF-8); the registry reports it instead of panicking here.
			metric = prometheus.NewInvalidMetric(f.desc, fmt.Errorf("making a metric of %s: %w", f.desc, err))
		}
		ch <- metric
	}
}

// series is one value of a family, its label values in the family's order.
type series struct {
	family int
	value  float64
	labels []string
}

// metrics appends d's samples to samples. The caller holds the Monitor's
// mu.
func (d *deployment) metrics(samples []series) []series {
	add := func(f int, v float64, values ...string) {
		labels := make([]string, 0, 1+len(values))
		labels = append(labels, validUTF8(d.info.ID))
		for _, l := range values {
			labels = append(labels, validUTF8(l))
		}
		samples = append(samples, series{family: f, value: v, labels: labels})
	}
	for _, id := range d.order {
		in := d.instances[id]
		if !in.lastCommit.IsZero() {
			add(mCommitLatency, float64(in.commitTook.Microseconds())/1000, id)
		}
		for _, b := range in.info.Stats.UnreachableBrokers {
			add(mBrokerUnreachable, time.Since(b.Since).Seconds(), id, b.Broker)
		}
		for _, ts := range in.info.Stats.Tasks {
			task := ts.ID.String()
			t := in.task(ts.ID)
			add(mProcessed, float64(ts.Processed), id, task)
			if st := max(ts.StreamTime, t.streamTime); st >= 0 {
				add(mStreamTime, float64(st), id, task)
			}
			if lag := taskLag(ts); lag >= 0 {
				add(mConsumerLag, float64(lag), id, task)
			}
			for store, r := range t.restores {
				add(mRestoreLeft, float64(max(0, r.end-r.start-r.restored)), id, task, store)
			}
		}
		for _, sb := range in.info.Stats.Standbys {
			task := sb.ID.String()
			for _, st := range sb.Stores {
				add(mStandbyLag, float64(st.Lag), id, task, st.Name)
				add(mStandbyLagMs, float64(st.TimeLag.Milliseconds()), id, task, st.Name)
			}
		}
	}
	for k, l := range d.late {
		add(mLateDropped, float64(l.drops), k.instance, k.task.String(), k.store)
		add(mLateness, float64(l.lateness), k.instance, k.task.String(), k.store)
	}
	for k, n := range d.failoverCounts {
		add(mFailovers, float64(n), k.from, k.task)
	}
	for task, ms := range d.lastDowntime {
		add(mFailoverDowntime, float64(ms), task)
	}
	d.snapshotMetrics(add)
	return samples
}

// validUTF8 replaces what is not UTF-8 in a label value: the client
// refuses such a value, and one odd deployment or store name must not
// cost the whole scrape.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

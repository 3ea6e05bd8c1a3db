package bench

import "time"

// Phases split one run of a benchmark in three, so that the fixed costs
// every run pays once (creating clients and stores, joining the group,
// the last flush and commit) no longer decide a ratio of short runs:
//
//   - StartUp runs from the call until the first input record began to
//     be processed (for a restore: was restored).
//   - The steady span runs, in the usual case, from the first sample at or
//     past 10% of the records to the first at or past 90% (see
//     phaseClock), after the warm-up of the first tenth and before the
//     tail; SteadyRecords records were processed in Steady.
//   - FinalCommit runs from the last input record processed to the end of
//     the run: the commit that covers it (for a restore: the end of the
//     restore).
//
// A zero Steady means the run was too short to measure a span (its
// records came in one batch); Result.SteadyPerSecond then falls back to
// the whole run's rate.
type Phases struct {
	StartUp       time.Duration
	SteadyRecords int
	Steady        time.Duration
	FinalCommit   time.Duration
}

// perSecond is the steady rate, 0 when no span was measured.
func (p Phases) perSecond() float64 {
	if p.Steady <= 0 || p.SteadyRecords <= 0 {
		return 0
	}
	return float64(p.SteadyRecords) / p.Steady.Seconds()
}

// Fractions of a run's records that bound its steady span: what comes
// before steadyFrom is warm-up (caches, heap and connections growing),
// what comes after steadyTo the tail (partitions finishing one by one).
const (
	steadyFromPercent = 10
	steadyToPercent   = 90
)

// phaseSample is how many records a run had processed at a moment.
type phaseSample struct {
	at time.Time
	n  int
}

// phaseClock measures one run's Phases from samples (time, records
// processed so far) that the run feeds it as it goes: after every batch,
// or every poll of a counter. It keeps four of them: the first with any
// record, the first at or past steadyFromPercent of the records, the
// first at or past steadyToPercent, and the last (frozen once it reaches
// every record). Steady rates are of the counts actually observed, so a
// batch that jumps past a bound costs no precision but the batch's own.
//
// When the 10%..90% span is empty (a sample jumped over both bounds,
// which tiny test inputs do), the steady span is the whole processing
// span, first sample to last; when that is empty too (every record came
// in one batch), Steady stays zero (see Phases). It is not safe for
// concurrent use.
type phaseClock struct {
	start                 time.Time // the call
	records               int       // the run's records
	first, from, to, last phaseSample
}

func newPhaseClock(start time.Time, records int) *phaseClock {
	return &phaseClock{start: start, records: records}
}

// observe records that n records were processed by at.
func (c *phaseClock) observe(at time.Time, n int) {
	if n <= 0 || c.last.n >= c.records {
		return
	}
	s := phaseSample{at: at, n: n}
	if c.first.n == 0 {
		c.first = s
	}
	if c.from.n == 0 && 100*n >= steadyFromPercent*c.records {
		c.from = s
	}
	if c.to.n == 0 && 100*n >= steadyToPercent*c.records {
		c.to = s
	}
	c.last = s
}

// phases returns the run's phases for a run that ended at end. A run
// that processed nothing has only its start-up, the whole run.
func (c *phaseClock) phases(end time.Time) Phases {
	if c.first.n == 0 {
		return Phases{StartUp: end.Sub(c.start)}
	}
	p := Phases{StartUp: c.first.at.Sub(c.start), FinalCommit: end.Sub(c.last.at)}
	for _, span := range [][2]phaseSample{{c.from, c.to}, {c.first, c.last}} {
		a, b := span[0], span[1]
		if a.n > 0 && b.n > a.n && b.at.After(a.at) {
			p.SteadyRecords, p.Steady = b.n-a.n, b.at.Sub(a.at)
			break
		}
	}
	return p
}

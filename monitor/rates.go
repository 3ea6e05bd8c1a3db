package monitor

import "time"

// defaultRateWindow is the span a node's averaged rates cover
// (Options.RateWindow). A windowed aggregation that emits on window close
// sends nothing between closes and a burst at each: its per-second rate
// reads 0 most of the time and a spike now and then, while its average
// over a span holding several closes reads what its consumers receive.
const defaultRateWindow = 20 * time.Second

// ratePoint is a node's traffic counted up to t: records in and out over
// all its tasks since the series began.
type ratePoint struct {
	t       time.Time
	in, out int64
}

// rateSeries is a short series of one node's cumulative counts, one point
// per sample, as long as the span it averages over and one point more.
type rateSeries struct {
	points  []ratePoint
	in, out int64
}

// add counts the records in and out since the last sample, taken at now,
// and drops the points the span no longer needs: every one but the
// newest at or before now-span.
func (s *rateSeries) add(now time.Time, dIn, dOut int64, span time.Duration) {
	s.in += dIn
	s.out += dOut
	s.points = append(s.points, ratePoint{t: now, in: s.in, out: s.out})
	from := now.Add(-span)
	drop := 0
	for drop+1 < len(s.points) && !s.points[drop+1].t.After(from) {
		drop++
	}
	if drop > 0 {
		s.points = append(s.points[:0], s.points[drop:]...)
	}
}

// avg returns the records/s in and out over the series' span: from its
// oldest point (span before the newest, or the first sample while the
// series is younger) to its newest. It is 0 until two samples are apart.
func (s *rateSeries) avg() (in, out float64) {
	if len(s.points) < 2 {
		return 0, 0
	}
	first, last := s.points[0], s.points[len(s.points)-1]
	dt := last.t.Sub(first.t).Seconds()
	if dt <= 0 {
		return 0, 0
	}
	return float64(last.in-first.in) / dt, float64(last.out-first.out) / dt
}

// addNodeCounts appends a sample's node counts (records in and out per
// node name since the last sample, over all tasks) to the deployment's
// series; nodes absent from counts get a point of none.
func (d *deployment) addNodeCounts(now time.Time, counts map[string][2]int64, span time.Duration) {
	if d.nodeSeries == nil {
		d.nodeSeries = map[string]*rateSeries{}
	}
	for name := range counts {
		if d.nodeSeries[name] == nil {
			d.nodeSeries[name] = &rateSeries{}
		}
	}
	for name, s := range d.nodeSeries {
		c := counts[name]
		s.add(now, c[0], c[1], span)
	}
}

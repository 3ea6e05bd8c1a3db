package bench

import (
	"testing"
	"time"
)

// TestPhaseClock feeds the clock samples (ms after the start, records so
// far) and checks the phases of a run that ended at end ms.
func TestPhaseClock(t *testing.T) {
	type sample struct{ ms, n int }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name    string
		records int
		samples []sample
		end     int
		want    Phases
	}{
		{
			name:    "steady span from the first sample at 10% to the first at 90%",
			records: 1000,
			samples: []sample{{50, 0}, {100, 50}, {150, 120}, {200, 500}, {260, 920}, {300, 1000}},
			end:     400,
			want:    Phases{StartUp: ms(100), SteadyRecords: 800, Steady: ms(110), FinalCommit: ms(100)},
		},
		{
			name:    "bounds exactly at 10% and 90%",
			records: 1000,
			samples: []sample{{10, 100}, {20, 900}, {30, 1000}},
			end:     30,
			want:    Phases{StartUp: ms(10), SteadyRecords: 800, Steady: ms(10), FinalCommit: 0},
		},
		{
			name:    "samples after the last record are ignored",
			records: 1000,
			samples: []sample{{10, 100}, {20, 900}, {30, 1000}, {40, 1000}},
			end:     50,
			want:    Phases{StartUp: ms(10), SteadyRecords: 800, Steady: ms(10), FinalCommit: ms(20)},
		},
		{
			name:    "one sample jumps both bounds: the whole processing span",
			records: 1000,
			samples: []sample{{20, 5}, {70, 995}, {80, 1000}},
			end:     90,
			want:    Phases{StartUp: ms(20), SteadyRecords: 995, Steady: ms(60), FinalCommit: ms(10)},
		},
		{
			name:    "two batches: the whole processing span",
			records: 1000,
			samples: []sample{{20, 600}, {70, 1000}},
			end:     100,
			want:    Phases{StartUp: ms(20), SteadyRecords: 400, Steady: ms(50), FinalCommit: ms(30)},
		},
		{
			name:    "every record in one batch: no steady span",
			records: 1000,
			samples: []sample{{5, 0}, {40, 1000}},
			end:     60,
			want:    Phases{StartUp: ms(40), FinalCommit: ms(20)},
		},
		{
			name:    "nothing processed: all start-up",
			records: 1000,
			samples: []sample{{5, 0}},
			end:     60,
			want:    Phases{StartUp: ms(60)},
		},
		{
			name:    "samples at one instant: no steady span",
			records: 1000,
			samples: []sample{{30, 10}, {30, 500}, {30, 1000}},
			end:     30,
			want:    Phases{StartUp: ms(30)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			c := newPhaseClock(start, tc.records)
			for _, s := range tc.samples {
				c.observe(start.Add(ms(s.ms)), s.n)
			}
			if got := c.phases(start.Add(ms(tc.end))); got != tc.want {
				t.Errorf("phases = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSteadyPerSecond checks the steady rate and its fallback to the
// whole run's when no span was measured.
func TestSteadyPerSecond(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		want float64
	}{
		{"steady span", Result{Records: 1000, Elapsed: 2 * time.Second, Phases: Phases{SteadyRecords: 800, Steady: 400 * time.Millisecond}}, 2000},
		{"no span: the whole run", Result{Records: 1000, Elapsed: 2 * time.Second, Phases: Phases{StartUp: time.Second}}, 500},
		{"nothing measured", Result{}, 0},
	}
	for _, tc := range tests {
		if got := tc.res.SteadyPerSecond(); got != tc.want {
			t.Errorf("%s: SteadyPerSecond = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// checkPhases checks that a measured run's phases fit in its span: a
// start-up (every run connects before its first record), a final commit
// after it, no more steady records than records.
func checkPhases(t *testing.T, r Run) {
	t.Helper()
	p := r.Phases
	if p.StartUp <= 0 || p.FinalCommit < 0 || p.StartUp+p.Steady+p.FinalCommit > r.Elapsed || p.SteadyRecords > r.Records {
		t.Errorf("%s: phases %+v do not fit %d records in %v", r.Name, p, r.Records, r.Elapsed)
	}
}

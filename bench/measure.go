package bench

import (
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// countRuns measures CountFuncs over one input topic, one run at a time:
// the runs of the benchmarks that compare two Braid counts (RunWindowed,
// RunEOS).
type countRuns struct {
	bench      string // the benchmark, "bench eos", that prefixes errors
	brokers    []string
	cl         *kgo.Client
	adm        *kadm.Client
	in         string // the input topic
	partitions int
	records    int
	w          io.Writer // where the run lines go
	width      int       // of the run names in the lines
	rate       rate      // the records/s compareRounds compares; steadyRate's run lines show the phases
}

// rate is which records/s of a run a benchmark compares: wholeRate, the
// whole call's, for the benchmarks whose fixed costs are part of what
// they compare (pipe, eos); steadyRate for those that compare throughput
// (count, join, windowed, restore), which report start-up and final
// commit beside it, in their run lines and RESULT line.
type rate int

const (
	wholeRate rate = iota
	steadyRate
)

// of returns run's records/s by r.
func (r rate) of(run Run) float64 {
	if r == steadyRate {
		return run.SteadyPerSecond()
	}
	return run.PerSecond()
}

// measure runs fn from the input to r.Out, which it creates first with
// the input's partition count, under the pprof label bench=side, which
// the goroutines fn starts inherit, so that a CPU profile of the whole
// benchmark tells the sides apart (go tool pprof -tagfocus bench=<side>).
// It then checks what the run wrote with check (not timed), writes the
// run's line and deletes every topic the run created, so that each run
// starts with the broker holding only the input.
func (c *countRuns) measure(ctx context.Context, r *Run, side string, fn CountFunc, check func(out string) (int64, error), warmUp bool) error {
	before, err := topicNames(ctx, c.cl)
	if err != nil {
		return fmt.Errorf("%s: %w", c.bench, err)
	}
	if err := EnsureTopic(ctx, c.adm, r.Out, c.partitions); err != nil {
		return fmt.Errorf("%s: %w", c.bench, err)
	}
	var res Result
	t := time.Now()
	pprof.Do(ctx, pprof.Labels("bench", side), func(ctx context.Context) {
		res, err = fn(ctx, c.brokers, c.in, r.Out, c.records)
	})
	r.Wall = time.Since(t)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.bench, r.Name, err)
	}
	r.Result = res
	switch {
	case res.Records != c.records:
		return fmt.Errorf("%s: %s reports %d records processed, want %d", c.bench, r.Name, res.Records, c.records)
	case res.Elapsed <= 0 || res.Elapsed > r.Wall:
		return fmt.Errorf("%s: %s reports %v elapsed, but its call took %v", c.bench, r.Name, res.Elapsed, r.Wall)
	}
	n, err := check(r.Out)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.bench, r.Name, err)
	}
	r.OutRecords = n
	line := runLine(c.width, r.Name, res, c.rate, warmUp)
	line += fmt.Sprintf("  (%d output records)", n)
	fmt.Fprintln(c.w, line)

	if err := deleteTopicsSince(ctx, c.cl, c.adm, before); err != nil {
		return fmt.Errorf("%s: %w", c.bench, err)
	}
	return nil
}

// alternate runs rounds rounds of two sides, interleaved so that neither
// always runs first (the first run after another meets a heap and a
// broker log the other left): even rounds run a then b, odd rounds b then
// a. It stops at the first error.
func alternate(rounds int, a, b func(round int) error) error {
	for round := range rounds {
		first, second := a, b
		if round%2 == 1 {
			first, second = b, a
		}
		if err := first(round); err != nil {
			return err
		}
		if err := second(round); err != nil {
			return err
		}
	}
	return nil
}

// roundRatios returns each round's records/s by rate of num over den's,
// sorted, and their median (the lower middle one for an even count): a
// ratio taken within rounds, as RunPipe's, is steadier than one of
// medians taken minutes apart.
func roundRatios(num, den []Run, rate rate) (ratios []float64, median float64) {
	ratios = make([]float64, len(num))
	for round := range num {
		ratios[round] = rate.of(num[round]) / rate.of(den[round])
	}
	slices.Sort(ratios)
	return ratios, ratios[(len(ratios)-1)/2]
}

// phaseKeys are the keys a RESULT line carries beside its steady ratio
// for its two compared sides, named a and b: " a_startup_ms=..
// b_startup_ms=.. a_final_commit_ms=.. b_final_commit_ms=..", the phases
// of each side's median run, in whole milliseconds.
func phaseKeys(a string, ra Run, b string, rb Run) string {
	return fmt.Sprintf(" %s_startup_ms=%d %s_startup_ms=%d %s_final_commit_ms=%d %s_final_commit_ms=%d",
		a, ra.Phases.StartUp.Milliseconds(), b, rb.Phases.StartUp.Milliseconds(),
		a, ra.Phases.FinalCommit.Milliseconds(), b, rb.Phases.FinalCommit.Milliseconds())
}

// roundSide is one side of a benchmark that compares two runs over the
// same input: what it runs, how its output is checked, and its run lines.
type roundSide struct {
	runs  *countRuns // its input, and where its lines go
	name  string     // its run lines' name
	label string     // its pprof label, bench=<label>
	out   string     // its output topic
	gated bool
	fn    CountFunc
	check func(out string) (int64, error)
}

// comparison is what compareRounds measured.
type comparison struct {
	// num and den are each side's median round.
	num, den Run
	// ratios are the rounds' records/s (by the runs' rate) of num over
	// den, sorted; ratio is their median.
	ratios []float64
	ratio  float64
	// wholeRatio is the median of the rounds' ratios of whole rates.
	wholeRatio float64
}

// compareRounds measures num against den as the windowed, eos and join
// benchmarks do: first, unless warmUp is nil, an unmeasured run of den's
// function to warmUp.Out; then rounds rounds of both, interleaved (see
// alternate, den first in even rounds). It compares the rate of den's
// countRuns, writes each side's median and the per-round ratios of
// num/den ("per-round ratios of <what>: ...") after the run lines.
func compareRounds(ctx context.Context, rounds int, warmUp *Run, num, den roundSide, what string) (comparison, error) {
	var c comparison
	if warmUp != nil {
		if err := den.runs.measure(ctx, warmUp, "warm-up", den.fn, den.check, true); err != nil {
			return c, err
		}
	}
	numRounds := make([]Run, rounds)
	denRounds := make([]Run, rounds)
	side := func(s roundSide, runs []Run) func(round int) error {
		return func(round int) error {
			runs[round] = Run{Name: s.name, Gated: s.gated, Out: s.out}
			return s.runs.measure(ctx, &runs[round], s.label, s.fn, s.check, false)
		}
	}
	if err := alternate(rounds, side(den, denRounds), side(num, numRounds)); err != nil {
		return c, err
	}
	rate := den.runs.rate
	c.num, c.den = medianRun(numRounds, rate), medianRun(denRounds, rate)
	c.ratios, c.ratio = roundRatios(numRounds, denRounds, rate)
	_, c.wholeRatio = roundRatios(numRounds, denRounds, wholeRate)
	w, width := den.runs.w, den.runs.width
	fmt.Fprintf(w, "medians of %d rounds:\n", rounds)
	fmt.Fprintf(w, "  %-*s  %9s rec/s\n", width, c.den.Name, thousands(rate.of(c.den)))
	fmt.Fprintf(w, "  %-*s  %9s rec/s\n", width, c.num.Name, thousands(rate.of(c.num)))
	fmt.Fprintf(w, "per-round ratios of %s: %s\n", what, formatRatios(c.ratios))
	return c, nil
}

// writeSteadyMedians writes the steady records/s of each median run of
// runs, a line each, under "medians of <rounds> rounds (steady state):":
// the medians of the benchmarks that compare three sides by steady state
// (count, join, windowed).
func writeSteadyMedians(w io.Writer, rounds, width int, runs ...Run) {
	fmt.Fprintf(w, "medians of %d rounds (steady state):\n", rounds)
	for _, m := range runs {
		fmt.Fprintf(w, "  %-*s  %9s rec/s\n", width, m.Name, thousands(m.SteadyPerSecond()))
	}
}

// rotateRounds measures sides rounds times, every round running each side
// once, in an order rotated by one each round (round r starts with side r
// mod len(sides)), so that no side always runs first or after the same
// other. It returns each side's runs by round and stops at the first
// error.
func rotateRounds(ctx context.Context, rounds int, sides []roundSide) ([][]Run, error) {
	runs := make([][]Run, len(sides))
	for i := range runs {
		runs[i] = make([]Run, rounds)
	}
	for round := range rounds {
		for k := range sides {
			i := (round + k) % len(sides)
			s := sides[i]
			runs[i][round] = Run{Name: s.name, Gated: s.gated, Out: s.out}
			if err := s.runs.measure(ctx, &runs[i][round], s.label, s.fn, s.check, false); err != nil {
				return nil, err
			}
		}
	}
	return runs, nil
}

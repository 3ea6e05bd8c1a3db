package datagen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// tick is how often Run produces the records that came due.
	tick = 20 * time.Millisecond
	// maxBacklog bounds, in seconds of the rate, how far Run catches up
	// after producing stalled (a full buffer, a slow broker); beyond it
	// the records are skipped and the achieved rate shows the shortfall.
	maxBacklog = 0.25
	// drainTimeout is how long Run waits, once its context ends, for the
	// records it handed to the client to be acknowledged.
	drainTimeout = 5 * time.Second
	// drainStall cuts the drain short when no record was acknowledged for
	// this long: the broker is gone or unreachable, and a person who
	// pressed Ctrl-C is not made to wait for it. (Without it Run waited
	// for the client, which retries a dead broker's records for as long
	// as it lives: gen was seen running minutes after SIGTERM.)
	drainStall = time.Second
)

// Generator produces a Spec's records to Kafka until stopped.
type Generator struct {
	cl   *kgo.Client
	spec spec
	rng  *rand.Rand // Run's goroutine only
	seq  int64      // Run's goroutine only

	running atomic.Bool

	produced, late, errors atomic.Int64

	mu      sync.Mutex
	started time.Time
	stopped time.Time
}

// Stats are a generator's counts so far.
type Stats struct {
	Produced, Late int64     // records acknowledged by the broker; Late of them were late ones
	Errors         int64     // records that failed
	Started        time.Time // when Run started; zero before
	Rate           float64   // achieved records/s: Produced over the time Run has run
}

// New returns a generator of spec's records that produces with cl. It
// validates the spec. The spec's topic must exist, unless cl allows
// automatic topic creation and the cluster does it.
func New(cl *kgo.Client, spec Spec) (*Generator, error) {
	if cl == nil {
		return nil, errors.New("datagen: New needs a client")
	}
	s, errs := spec.compile()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	seed := s.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	return &Generator{cl: cl, spec: s, rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}, nil
}

// Run produces at the spec's rate, in small batches every few tens of
// milliseconds, until ctx ends; it returns nil then, or the first produce
// error. Keys cycle uniformly at random over the cardinality. Once ctx
// ends, Run waits for the records in flight, for drainTimeout at most and
// for drainStall at most without an acknowledgement, so that Stats are
// final when it returns; records still unacknowledged then (a broker that
// is gone) are abandoned, counted neither produced nor failed. A
// Generator runs once.
func (g *Generator) Run(ctx context.Context) error {
	if !g.running.CompareAndSwap(false, true) {
		return fmt.Errorf("datagen %q: Run called twice", g.spec.Topic)
	}
	// Records outlive ctx by the drain, so that those handed to the
	// client are delivered rather than failed at once by the
	// cancellation; cancelProduce ends the drain.
	produceCtx, cancelProduce := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelProduce()

	fl := newFlight()
	firstErr := make(chan error, 1)
	promise := func(late bool) func(*kgo.Record, error) {
		return func(_ *kgo.Record, err error) {
			if !fl.land() {
				return // abandoned: Run has returned
			}
			switch {
			case err == nil:
				g.produced.Add(1)
				if late {
					g.late.Add(1)
				}
			case produceCtx.Err() != nil && errors.Is(err, context.Canceled):
				// Abandoned when stopping: neither produced nor an error.
			default:
				g.errors.Add(1)
				select {
				case firstErr <- err:
				default:
				}
			}
		}
	}

	start := time.Now()
	g.mu.Lock()
	g.started = start
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.stopped = time.Now()
		g.mu.Unlock()
	}()

	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	credit, last := 1.0, start // the first record goes at once
	limit := max(1, g.spec.Rate*maxBacklog)
	var err error
loop:
	for {
		for ; credit >= 1 && ctx.Err() == nil; credit-- {
			rec, late := g.next(time.Now())
			fl.takeOff()
			g.cl.Produce(produceCtx, rec, promise(late))
		}
		select {
		case <-ctx.Done():
			break loop
		case err = <-firstErr:
			break loop
		case now := <-ticker.C:
			credit = min(credit+g.spec.Rate*now.Sub(last).Seconds(), limit)
			last = now
		}
	}
	if err != nil {
		cancelProduce()
	}
	fl.drain(produceCtx.Done(), ticker.C)
	cancelProduce()
	if err == nil {
		select {
		case err = <-firstErr:
		default:
		}
	}
	if err != nil {
		return fmt.Errorf("datagen %q: producing: %w", g.spec.Topic, err)
	}
	return nil
}

// flight counts the records handed to the client and not yet acknowledged.
type flight struct {
	mu       sync.Mutex
	n        int
	lastLand time.Time
	landed   chan struct{} // signalled at every acknowledgement
	closed   bool          // the drain ended: late acknowledgements are ignored
}

func newFlight() *flight { return &flight{landed: make(chan struct{}, 1)} }

func (f *flight) takeOff() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

// land records an acknowledgement; false if the drain already ended.
func (f *flight) land() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.n--
	f.lastLand = time.Now()
	select {
	case f.landed <- struct{}{}:
	default:
	}
	return true
}

// drain waits until every record landed, abort is closed, drainTimeout
// passed or no record landed for drainStall (checked at every tick), and
// then ignores whatever lands later.
func (f *flight) drain(abort <-chan struct{}, tick <-chan time.Time) {
	start := time.Now()
	f.mu.Lock()
	f.lastLand = start
	f.mu.Unlock()
	for {
		f.mu.Lock()
		done := f.n == 0 || time.Since(start) > drainTimeout || time.Since(f.lastLand) > drainStall
		if done {
			f.closed = true
		}
		f.mu.Unlock()
		if done {
			return
		}
		select {
		case <-abort:
			f.mu.Lock()
			f.closed = true
			f.mu.Unlock()
			return
		case <-f.landed:
		case <-tick:
		}
	}
}

// next returns the next record, made at now, and whether it is a late one.
func (g *Generator) next(now time.Time) (*kgo.Record, bool) {
	s := &g.spec
	i := g.rng.IntN(s.Keys)
	key := s.KeyPrefix + "-" + strconv.Itoa(i)
	ts, late := now, false
	switch {
	case s.LateFraction > 0 && g.rng.Float64() < s.LateFraction:
		ts, late = now.Add(-s.LateBy), true
	case s.Jitter > 0:
		ts = now.Add(-time.Duration(g.rng.Int64N(int64(s.Jitter) + 1)))
	}
	// Kafka keeps milliseconds; the value's timestamps say the same.
	ts = time.UnixMilli(ts.UnixMilli())
	value := s.tmpl.Render(key, g.seq, ts, g.rng)
	g.seq++
	return &kgo.Record{Topic: s.Topic, Key: []byte(key), Value: value, Timestamp: ts, Headers: generatorHeaders}, late
}

// generatorHeaders mark a Generator's records (GeneratorHeader). The
// client only reads them.
var generatorHeaders = []kgo.RecordHeader{{Key: GeneratorHeader, Value: []byte("datagen")}}

// Stats returns counts so far, safe from any goroutine.
func (g *Generator) Stats() Stats {
	g.mu.Lock()
	started, stopped := g.started, g.stopped
	g.mu.Unlock()
	st := Stats{Produced: g.produced.Load(), Late: g.late.Load(), Errors: g.errors.Load(), Started: started}
	if !started.IsZero() {
		end := stopped
		if end.IsZero() {
			end = time.Now()
		}
		if d := end.Sub(started).Seconds(); d > 0 {
			st.Rate = float64(st.Produced) / d
		}
	}
	return st
}

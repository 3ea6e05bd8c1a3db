package deploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/braidstream/braid/datagen"
	"github.com/twmb/franz-go/pkg/kgo"
)

// GeneratorSpec is a data generator for one source topic of a deployment,
// as the live view sends it (see datagen.Spec for the fields).
type GeneratorSpec struct {
	Topic        string            `json:"topic"`
	Rate         float64           `json:"rate"`
	Keys         int               `json:"keys"`
	KeyPrefix    string            `json:"keyPrefix,omitempty"`
	Template     map[string]string `json:"template"`
	JitterMs     int64             `json:"jitterMs"`
	LateFraction float64           `json:"lateFraction"`
	LateByMs     int64             `json:"lateByMs,omitempty"`
	Seed         int64             `json:"seed,omitempty"`
	// ConfirmExternal starts the generator on a topic another producer
	// feeds, which StartGenerator otherwise refuses
	// (ExternalProducerError): the person saw that its records will mix
	// with theirs.
	ConfirmExternal bool `json:"confirmExternal,omitempty"`
}

func (s GeneratorSpec) datagen() datagen.Spec {
	return datagen.Spec{
		Topic: s.Topic, Rate: s.Rate, Keys: s.Keys, KeyPrefix: s.KeyPrefix, Template: s.Template,
		Jitter: time.Duration(s.JitterMs) * time.Millisecond, LateFraction: s.LateFraction,
		LateBy: time.Duration(s.LateByMs) * time.Millisecond, Seed: s.Seed,
	}
}

// GeneratorInfo is a running generator: its spec and its counts.
type GeneratorInfo struct {
	GeneratorSpec
	Produced     int64   `json:"produced"`
	Late         int64   `json:"late"`
	Errors       int64   `json:"errors"`
	AchievedRate float64 `json:"achievedRate"`
	Error        string  `json:"error,omitempty"`
}

// NoGeneratorError says a topic of a deployment has no generator.
type NoGeneratorError struct{ Deployment, Topic string }

func (e *NoGeneratorError) Error() string {
	return fmt.Sprintf("deployment %q has no generator on topic %q", e.Deployment, e.Topic)
}

// ExternalProducerError says a generator was not started because
// another producer feeds its topic: Records of the latest Sampled records
// do not carry datagen.GeneratorHeader.
type ExternalProducerError struct {
	Topic            string
	Records, Sampled int
}

func (e *ExternalProducerError) Error() string {
	return fmt.Sprintf("topic %q is fed by another producer: %d of its latest %d records were not written by Braid's generator, "+
		"and a generator would mix records of its own template with theirs; start it with confirmExternal to do so anyway",
		e.Topic, e.Records, e.Sampled)
}

// sampleSize is how many of the latest records of each partition
// GeneratorSample reads, and startCheckSize how many StartGenerator
// looks at for another producer's.
const (
	sampleSize     = 10
	startCheckSize = 5
	sampleTimeout  = 10 * time.Second
)

// StartGenerator starts (or replaces) the generator of one of a
// deployment's source topics. On a topic whose latest records come from
// another producer it answers an ExternalProducerError, unless the spec
// confirms (ConfirmExternal).
func (m *Manager) StartGenerator(id string, spec GeneratorSpec) error {
	dep, err := m.find(id)
	if err != nil {
		return err
	}
	if !spec.ConfirmExternal && slices.Contains(dep.gens.sources, spec.Topic) {
		ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
		recs, err := datagen.Sample(ctx, dep.gens.client, spec.Topic, startCheckSize)
		cancel()
		if err != nil {
			return fmt.Errorf("starting a generator on %q: %w", spec.Topic, err)
		}
		if n := externalRecords(recs); n > 0 {
			return &ExternalProducerError{Topic: spec.Topic, Records: n, Sampled: len(recs)}
		}
	}
	if err := dep.gens.start(spec); err != nil {
		return err
	}
	m.saveRecords()
	return nil
}

// GeneratorSample is what a source topic holds: its latest records, how
// many of them another producer wrote, and the generator spec proposed
// from them.
type GeneratorSample struct {
	Topic    string                  `json:"topic"`
	Records  []datagen.SampledRecord `json:"records"`
	External int                     `json:"external"`
	Proposal datagen.Proposal        `json:"proposal"`
}

// GeneratorSample reads the latest records of one of a deployment's
// source topics (sampleSize of each partition) and proposes a generator
// for records shaped like them (datagen.Propose).
func (m *Manager) GeneratorSample(id, topic string) (GeneratorSample, error) {
	dep, err := m.find(id)
	if err != nil {
		return GeneratorSample{}, err
	}
	if !slices.Contains(dep.gens.sources, topic) {
		return GeneratorSample{}, &RequestError{Field: "topic",
			Problem: fmt.Sprintf("%q is not a source topic of the deployment (%s)", topic, strings.Join(dep.gens.sources, ", "))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	recs, err := datagen.Sample(ctx, dep.gens.client, topic, sampleSize)
	if err != nil {
		return GeneratorSample{}, err
	}
	return GeneratorSample{Topic: topic, Records: recs, External: externalRecords(recs), Proposal: datagen.Propose(recs)}, nil
}

// externalRecords counts the records no generator wrote.
func externalRecords(recs []datagen.SampledRecord) int {
	n := 0
	for _, r := range recs {
		if !r.FromGenerator() {
			n++
		}
	}
	return n
}

// StopGenerator stops the generator of a deployment's topic.
func (m *Manager) StopGenerator(id, topic string) error {
	dep, err := m.find(id)
	if err != nil {
		return err
	}
	if !dep.gens.stop(topic) {
		return &NoGeneratorError{Deployment: id, Topic: topic}
	}
	m.saveRecords()
	return nil
}

// generators runs a deployment's generators, one per source topic at
// most; each runs on a goroutine of its own, which stop and stopAll wait
// for.
type generators struct {
	client  *kgo.Client
	sources []string
	log     *slog.Logger

	// mu guards running.
	mu      sync.Mutex
	running map[string]*runningGenerator
}

type runningGenerator struct {
	spec   GeneratorSpec
	gen    *datagen.Generator
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done closes
}

func newGenerators(cl *kgo.Client, sources []string, log *slog.Logger) *generators {
	return &generators{client: cl, sources: sources, log: log, running: make(map[string]*runningGenerator)}
}

// start validates spec and runs it, stopping the topic's generator first.
func (g *generators) start(spec GeneratorSpec) error {
	if !slices.Contains(g.sources, spec.Topic) {
		return &RequestError{Field: "topic", Problem: fmt.Sprintf("%q is not a source topic of the deployment (%s)", spec.Topic, strings.Join(g.sources, ", "))}
	}
	gen, err := datagen.New(g.client, spec.datagen())
	if err != nil {
		return &RequestError{Field: "generator", Problem: err.Error()}
	}
	g.stop(spec.Topic)
	ctx, cancel := context.WithCancel(context.Background())
	rg := &runningGenerator{spec: spec, gen: gen, cancel: cancel, done: make(chan struct{})}
	g.mu.Lock()
	g.running[spec.Topic] = rg
	g.mu.Unlock()
	go func() {
		defer close(rg.done)
		if err := gen.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			rg.err = err
			g.log.Warn("generator stopped", "topic", spec.Topic, "err", err)
		}
	}()
	return nil
}

// stop stops the topic's generator and reports whether there was one.
func (g *generators) stop(topic string) bool {
	g.mu.Lock()
	rg := g.running[topic]
	delete(g.running, topic)
	g.mu.Unlock()
	if rg == nil {
		return false
	}
	rg.cancel()
	<-rg.done
	return true
}

func (g *generators) stopAll() {
	for _, spec := range g.specs() {
		g.stop(spec.Topic)
	}
}

// specs lists the running generators' specs, by topic.
func (g *generators) specs() []GeneratorSpec {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]GeneratorSpec, 0, len(g.running))
	for _, topic := range slices.Sorted(maps.Keys(g.running)) {
		out = append(out, g.running[topic].spec)
	}
	return out
}

// infos describes the generators, by topic.
func (g *generators) infos() []GeneratorInfo {
	g.mu.Lock()
	running := make([]*runningGenerator, 0, len(g.running))
	for _, topic := range slices.Sorted(maps.Keys(g.running)) {
		running = append(running, g.running[topic])
	}
	g.mu.Unlock()
	out := make([]GeneratorInfo, len(running))
	for i, rg := range running {
		st := rg.gen.Stats()
		out[i] = GeneratorInfo{GeneratorSpec: rg.spec, Produced: st.Produced, Late: st.Late, Errors: st.Errors, AchievedRate: st.Rate}
		select {
		case <-rg.done:
			if rg.err != nil {
				out[i].Error = rg.err.Error()
			}
		default:
		}
	}
	return out
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/braidstream/braid/datagen"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// genReportInterval is how often `braid gen` prints its progress; a
// variable for tests.
var genReportInterval = 2 * time.Second

func runGen(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("gen", "braid gen --topic T [--brokers 127.0.0.1:9092] [--rate R] [--keys N] [--key-prefix P]\n"+
		"                 [--field name=generator ...] [--jitter D] [--late-fraction F] [--late-by D] [--duration D] [--seed S]\n"+
		"                 [--partitions N] [--replication-factor N] [--create=false] [--client-config FILE]\n\n"+
		"Produces JSON records to a topic at a rate, over a set of keys, optionally out of order\n"+
		"(--jitter) and with a fraction of records far in the past (--late-fraction, --late-by).\n"+
		"Field generators: key, sequence, sequence(start), random(min, max), randfloat(min, max),\n"+
		"choice(a, b, ...), timestamp, bool, 'quoted text' or a JSON number. Without --field:\n"+
		"the demo's orders, id=sequence customer=key amount=random(1, 500) ts=timestamp, which orders-demo.json reads.\n"+
		"A missing topic is created (--partitions, --replication-factor) and gen says so; an existing one is\n"+
		"used as it is. With --create=false a missing topic is an error.", stdout)
	topic := fs.String("topic", "", "topic to produce to (required)")
	create := fs.Bool("create", true, "create the topic when it does not exist")
	partitions := fs.Int("partitions", -1, "partitions of a topic gen creates; -1: the broker's default (num.partitions)")
	replication := fs.Int("replication-factor", -1, "replication factor of a topic gen creates; -1: the broker's default")
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated bootstrap brokers; when not given, bootstrap.servers of --client-config if it has them")
	rate := fs.Float64("rate", 10, "records per second, up to 1e6")
	keys := fs.Int("keys", 10, "key cardinality: keys PREFIX-0 .. PREFIX-(N-1)")
	keyPrefix := fs.String("key-prefix", "key", "prefix of the keys")
	fields := genFields{}
	fs.Var(fields, "field", "a field of the JSON value as `name=generator`, e.g. amount='random(1, 500)'; repeatable")
	jitter := fs.Duration("jitter", 0, "out-of-order records: each timestamp is now minus a random duration up to this")
	lateFraction := fs.Float64("late-fraction", 0, "fraction (0..1) of records stamped --late-by in the past")
	lateBy := fs.Duration("late-by", time.Minute, "how far in the past late records lie; must exceed --jitter")
	duration := fs.Duration("duration", 0, "stop after this long; 0: run until Ctrl-C")
	seed := fs.Int64("seed", 0, "random seed, for repeatable data; 0: time-based")
	client := clientFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("gen: unexpected arguments %q", fs.Args())
	case *topic == "":
		return errors.New("gen: --topic is required")
	case *rate <= 0:
		return fmt.Errorf("gen: --rate %v: must be > 0", *rate)
	case *keys <= 0:
		return fmt.Errorf("gen: --keys %d: must be positive", *keys)
	case *lateBy <= 0:
		return fmt.Errorf("gen: --late-by %v: must be positive", *lateBy)
	case *duration < 0:
		return fmt.Errorf("gen: --duration %v: must not be negative", *duration)
	case *partitions == 0 || *partitions < -1 || *partitions > math.MaxInt32:
		return fmt.Errorf("gen: --partitions %d: must be positive, or -1 for the broker's default", *partitions)
	case *replication == 0 || *replication < -1 || *replication > math.MaxInt16:
		return fmt.Errorf("gen: --replication-factor %d: must be positive, or -1 for the broker's default", *replication)
	}
	if len(fields) == 0 {
		fields = demoOrder()
	}
	spec := datagen.Spec{
		Topic: *topic, Rate: *rate, Keys: *keys, KeyPrefix: *keyPrefix, Template: fields,
		Jitter: *jitter, LateFraction: *lateFraction, LateBy: *lateBy, Seed: *seed,
	}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}

	if err := client.load(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	seeds := client.brokers(fs, "brokers")
	if len(seeds) == 0 {
		return errors.New("gen: --brokers is empty")
	}
	*brokers = strings.Join(seeds, ",")
	if err := client.check(ctx, seeds); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	cl, err := kgo.NewClient(append(client.opts, kgo.SeedBrokers(seeds...))...)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	defer cl.Close()
	if err := ensureTopic(ctx, cl, topicSpec{*topic, *brokers, *create, int32(*partitions), int16(*replication)}, stdout); err != nil {
		return err
	}
	g, err := datagen.New(cl, spec)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}

	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	until := "stop with Ctrl-C"
	if *duration > 0 {
		until = "for " + duration.String()
	}
	fmt.Fprintf(stdout, "braid gen: producing to %q on %s at %v records/s over %d keys (%s)\n", *topic, *brokers, *rate, *keys, until)
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	report := time.NewTicker(genReportInterval)
	defer report.Stop()
	for {
		select {
		case err := <-done:
			st := g.Stats()
			var took time.Duration
			if !st.Started.IsZero() {
				took = time.Since(st.Started).Round(time.Millisecond)
			}
			fmt.Fprintf(stdout, "braid gen: %s to %q in %v: %d late, %d errors, %.1f records/s\n",
				countNoun(int(st.Produced), "record"), *topic, took, st.Late, st.Errors, st.Rate)
			if err != nil {
				return fmt.Errorf("gen: %w", err)
			}
			return nil
		case <-report.C:
			st := g.Stats()
			fmt.Fprintf(stdout, "%s  produced %d  late %d  errors %d  %.1f records/s\n", clock(), st.Produced, st.Late, st.Errors, st.Rate)
		}
	}
}

// topicSpec is the topic gen produces to, where, and how to create it.
type topicSpec struct {
	topic, brokers string
	create         bool
	partitions     int32
	replication    int16
}

// ensureTopic makes sure the cluster has the topic. An existing topic is
// used as it is. A missing one is created with the partitions and
// replication factor asked for (-1: the broker's defaults), and gen says
// so on stdout, so that a typo does not feed a new topic unnoticed; with
// create false it is an error saying how to have it. Gen never leaves it
// to the broker's automatic creation on produce.
func ensureTopic(ctx context.Context, cl *kgo.Client, ts topicSpec, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, ts.topic)
	if err != nil {
		return fmt.Errorf("gen: reading the metadata of topic %q from %s: %w", ts.topic, ts.brokers, err)
	}
	d, ok := details[ts.topic]
	if ok && d.Err == nil && len(d.Partitions) > 0 {
		return nil
	}
	if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("gen: reading the metadata of topic %q from %s: %w", ts.topic, ts.brokers, d.Err)
	}
	if !ts.create {
		return fmt.Errorf("gen: topic %q does not exist on %s: drop --create=false to have gen create it (--partitions, --replication-factor)", ts.topic, ts.brokers)
	}
	resp, err := adm.CreateTopic(ctx, ts.partitions, ts.replication, nil, ts.topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		// Created meanwhile by someone else: used as it is.
		return nil
	case err != nil:
		return fmt.Errorf("gen: creating topic %q on %s with %s and %s: %w", ts.topic, ts.brokers,
			topicCount(ts.partitions, "partitions"), topicCount(int32(ts.replication), "replication factor"), err)
	}
	fmt.Fprintf(stdout, "braid gen: created topic %q on %s with %s, replication factor %d\n", ts.topic, ts.brokers, countNoun(int(resp.NumPartitions), "partition"), resp.ReplicationFactor)
	return nil
}

// topicCount says a count asked for: "3 partitions", or "the broker's
// default partitions" for -1.
func topicCount(n int32, what string) string {
	if n < 0 {
		return "the broker's default " + what
	}
	return fmt.Sprintf("%s %d", what, n)
}

// genFields collects repeated --field name=generator flags into a
// datagen template.
type genFields map[string]string

func (f genFields) String() string {
	var parts []string
	for name, gen := range f {
		parts = append(parts, name+"="+gen)
	}
	return strings.Join(parts, " ")
}

func (f genFields) Set(s string) error {
	name, gen, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	switch {
	case !ok:
		return fmt.Errorf("%q is not name=generator", s)
	case name == "":
		return fmt.Errorf("%q has no field name", s)
	}
	if _, dup := f[name]; dup {
		return fmt.Errorf("field %q given twice", name)
	}
	if _, err := datagen.ParseTemplate(map[string]string{name: gen}); err != nil {
		return err
	}
	f[name] = gen
	return nil
}

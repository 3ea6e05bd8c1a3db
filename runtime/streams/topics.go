package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// prepareTopics checks that every source topic exists and creates the
// internal topics, each with the partition count of the sub-topology that
// writes it, so that a repartition preserves the parallelism upstream.
func (a *App) prepareTopics(ctx context.Context) error {
	cl, err := a.newAdminClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	if a.replication == nil {
		// Decided once per App, at its first connection: a later
		// reconnection keeps it, and its warnings about existing topics.
		r, err := ReplicationFor(ctx, adm, a.cfg.ReplicationFactor)
		if err != nil {
			return brokerErr("deciding the internal topics' replication factor", err)
		}
		a.replication = r
	}
	partitions, err := a.sourcePartitions(ctx, adm)
	if err != nil {
		return err
	}
	if err := a.topo.sizeInternalTopics(partitions); err != nil {
		return err
	}
	for _, it := range a.topo.internalTopics() {
		if err := a.ensureInternalTopic(ctx, adm, a.realTopic(it.name, true), partitions[it.name], map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}); err != nil {
			return err
		}
	}
	// A changelog has a partition per task of its sub-topology: as many
	// as the sub-topology's widest input.
	for _, st := range a.topo.subtopologies {
		n := 0
		for _, src := range st.sources {
			for _, t := range src.topics {
				n = max(n, partitions[t])
			}
		}
		for _, node := range st.nodes {
			for _, spec := range node.storeSpecs {
				if !spec.logged {
					continue
				}
				if err := a.ensureInternalTopic(ctx, adm, changelogTopic(a.cfg.ApplicationID, spec.name), n, changelogConfig(spec)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sourcePartitions returns the partition count of every user source topic,
// keyed by name, or every missing topic as a *MissingSourceTopicError.
func (a *App) sourcePartitions(ctx context.Context, adm *kadm.Client) (map[string]int, error) {
	topics := a.topo.SourceTopics()
	if dlq := a.cfg.DeadLetterTopic; dlq != "" {
		// Checked with the sources: a dead-letter topic that does not
		// exist would fail the App on the first bad record, not now.
		details, err := adm.ListTopics(ctx, dlq)
		if err != nil {
			return nil, brokerErr(fmt.Sprintf("describing dead-letter topic %q", dlq), err)
		}
		if d, ok := details[dlq]; !ok || d.Err != nil {
			return nil, fmt.Errorf("dead-letter topic %q does not exist; create it or leave Config.DeadLetterTopic empty", dlq)
		}
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, brokerErr("listing source topics", err)
	}
	out := make(map[string]int, len(topics))
	var errs []error
	for _, t := range topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			errs = append(errs, &MissingSourceTopicError{Topic: t})
		case d.Err != nil:
			errs = append(errs, brokerErr(fmt.Sprintf("describing source topic %q", t), d.Err))
		default:
			out[t] = len(d.Partitions)
		}
	}
	return out, errors.Join(errs...)
}

// sizeInternalTopics adds the partition count of every repartition topic
// to partitions, which holds the user topics' counts; internal topics go
// by their short name. A repartition topic has as many partitions as the
// widest input of the sub-topology that writes it, unless WithPartitions
// says otherwise, or, where it feeds a join, as the topics it is joined
// with. Joined user topics must agree: else the error is a
// *CopartitionError.
func (t *Topology) sizeInternalTopics(partitions map[string]int) error {
	internal := make(map[string]bool)
	for _, it := range t.internalTopics() {
		internal[it.name] = true
	}
	// A joined group's count: its user topics', which must agree.
	joined := make(map[string]int)
	for _, group := range t.copartitioned {
		first, n := "", 0
		for _, topic := range group {
			if internal[topic] {
				continue
			}
			if first == "" {
				first, n = topic, partitions[topic]
			} else if partitions[topic] != n {
				return &CopartitionError{Topic: first, Partitions: n, OtherTopic: topic, OtherPartitions: partitions[topic]}
			}
		}
		for _, topic := range group {
			if internal[topic] && n > 0 {
				joined[topic] = n
			}
		}
	}
	for _, it := range t.internalTopics() {
		n := it.partitions
		if n == 0 {
			n = joined[it.name]
		}
		if n == 0 {
			for _, src := range it.writer.sources {
				for _, topic := range src.topics {
					n = max(n, partitions[topic])
				}
			}
		}
		partitions[it.name] = n
	}
	// Repartition topics joined with each other only, or sized by
	// WithPartitions, must agree too.
	for _, group := range t.copartitioned {
		for _, topic := range group[1:] {
			if partitions[topic] != partitions[group[0]] {
				return &CopartitionError{Topic: group[0], Partitions: partitions[group[0]], OtherTopic: topic, OtherPartitions: partitions[topic]}
			}
		}
	}
	return nil
}

// windowChangelogExtraRetention is what a windowed store's changelog keeps
// beyond the store's retention, as Kafka Streams'
// windowstore.changelog.additional.retention.ms: a margin for clock skew
// between the broker and the records' timestamps.
const windowChangelogExtraRetention = 24 * time.Hour

// changelogConfig is the topic config of a store's changelog: compacted,
// and for a windowed store also deleted past its retention, since its keys
// (one per window) never repeat once the window is gone.
func changelogConfig(spec *storeSpec) map[string]*string {
	if spec.window == nil {
		return map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	}
	retention := time.Duration(spec.retention)*time.Millisecond + windowChangelogExtraRetention
	return map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact,delete"),
		"retention.ms":   kadm.StringPtr(strconv.FormatInt(retention.Milliseconds(), 10)),
	}
}

// ensureInternalTopic creates an internal topic with the App's
// replication (TopicReplication), or checks the partitions of the one
// that exists; one of another replication factor is left as it is, with
// a warning.
func (a *App) ensureInternalTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int, configs map[string]*string) error {
	resp, err := a.replication.CreateTopic(ctx, adm, int32(partitions), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		a.log.Info("created internal topic", "topic", topic, "partitions", partitions, "replication_factor", a.replication.Factor)
		return nil
	}
	var rfe *ReplicationFactorError
	if errors.As(err, &rfe) {
		return rfe // no retry heals it
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return brokerErr(fmt.Sprintf("creating internal topic %q", topic), err)
	}
	d, err := a.describeCreatedTopic(ctx, adm, topic)
	if err != nil {
		return err
	}
	if have := len(d.Partitions); have != partitions {
		return &InternalTopicError{Topic: topic, Partitions: have, ExpectedPartitions: partitions}
	}
	a.replication.WarnIfDiffers(a.log, d)
	return nil
}

// describeCreatedTopic describes a topic that exists, waiting until the
// metadata shows its partitions (AwaitTopics): another instance may have
// just created it. One still without partitions after the broker timeout
// comes back as it is, for the caller's InternalTopicError.
func (a *App) describeCreatedTopic(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetail, error) {
	wctx, cancel := context.WithTimeout(ctx, a.brokerTimeout())
	defer cancel()
	details, err := AwaitTopics(wctx, adm, topic)
	d := details[topic]
	switch {
	case err == nil:
		return d, nil
	case ctx.Err() != nil:
		return kadm.TopicDetail{}, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) && d.Err == nil:
		return d, nil
	case errors.Is(err, context.DeadlineExceeded):
		return kadm.TopicDetail{}, brokerErr(fmt.Sprintf("describing internal topic %q", topic), d.Err)
	}
	return kadm.TopicDetail{}, brokerErr(fmt.Sprintf("describing internal topic %q", topic), err)
}

// AwaitTopics returns once the cluster's metadata lists every one of
// topics with its partitions, with the metadata it read. Apache Kafka
// answers CreateTopics (and TOPIC_ALREADY_EXISTS) once its controller has
// a topic, before every broker's metadata does: for a moment the topic is
// unknown there, or has no partitions, and a consumer or a partition
// count check would take it for missing. A topic's error that no wait
// heals ends the wait at once; ctx's end ends it with ctx's error and the
// last metadata read.
func AwaitTopics(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.TopicDetails, error) {
	for {
		details, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("reading the metadata of topics %v: %w", topics, err)
		}
		ready := true
		for _, t := range topics {
			d := details[t]
			if d.Err == nil && len(d.Partitions) > 0 {
				continue
			}
			if d.Err != nil && !kerr.IsRetriable(d.Err) && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
				return details, fmt.Errorf("topic %q: %w", t, d.Err)
			}
			ready = false
		}
		if ready {
			return details, nil
		}
		select {
		case <-ctx.Done():
			return details, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// newAdminClient returns a client for one round of admin requests, apart
// from the group client: the caller closes it.
func (a *App) newAdminClient() (*kgo.Client, error) {
	cl, err := kgo.NewClient(slices.Concat(a.cfg.ClientOptions, a.reach.watch(a.log.With("client", "admin")),
		[]kgo.Opt{kgo.SeedBrokers(a.cfg.Brokers...)})...)
	if err != nil {
		return nil, fmt.Errorf("creating admin client: %w", err)
	}
	return cl, nil
}

package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxDefaultReplicationFactor is the replication factor of the topics
// Braid creates on a cluster of that many brokers or more, unless one is
// asked for: three copies survive a broker's fault and the restart of
// another.
const MaxDefaultReplicationFactor = 3

// MinInsyncReplicas is the min.insync.replicas Braid sets on a topic it
// creates with a replication factor of MaxDefaultReplicationFactor or
// more: a write acknowledged by all in-sync replicas (acks=all, which
// the App's producer uses under either guarantee) is then on two brokers
// at least, so a broker fault loses none.
const MinInsyncReplicas = 2

// DefaultReplicationFactor is the replication factor of the topics Braid
// creates on a cluster of brokers brokers when none is asked for:
// min(MaxDefaultReplicationFactor, brokers), at least 1. This is the one
// place the rule is written; TopicReplication applies it.
func DefaultReplicationFactor(brokers int) int {
	return max(1, min(MaxDefaultReplicationFactor, brokers))
}

// ReplicationFactorError is a topic Braid was to create with a
// replication factor the cluster cannot give it: more than its brokers.
type ReplicationFactorError struct {
	Topic   string
	Factor  int // the factor asked (Config.ReplicationFactor, --replication-factor)
	Brokers int // the brokers in the cluster's metadata
	Err     error
}

func (e *ReplicationFactorError) Error() string {
	noun := "brokers"
	if e.Brokers == 1 {
		noun = "broker"
	}
	return fmt.Sprintf("creating topic %q: replication factor %d asked, but the cluster has %d %s; "+
		"set the replication factor (Config.ReplicationFactor, --replication-factor) to at most %d, or 0 for the default min(%d, brokers)",
		e.Topic, e.Factor, e.Brokers, noun, e.Brokers, MaxDefaultReplicationFactor)
}

func (e *ReplicationFactorError) Unwrap() error { return e.Err }

// TopicReplication is how the topics Braid creates are replicated on one
// cluster, decided once (ReplicationFor) from its metadata: the factor,
// and min.insync.replicas with a factor of 3 or more. It warns once per
// topic about an existing topic of another factor, which it leaves as it
// is, as Kafka Streams does. Its methods may be called concurrently.
type TopicReplication struct {
	// Factor is the replication factor topics are created with.
	Factor int
	// Brokers is the number of brokers in the cluster's metadata.
	Brokers int
	// Asked is the factor asked for; 0 for the default from Brokers.
	Asked int

	mu     sync.Mutex
	warned map[string]bool
}

// ReplicationFor asks the cluster's metadata for its brokers and returns
// the replication of the topics to create there: factor, or, when factor
// is 0, DefaultReplicationFactor of the brokers. A factor above the
// brokers is not refused here but by CreateTopics, which names the topic.
func ReplicationFor(ctx context.Context, adm *kadm.Client, factor int) (*TopicReplication, error) {
	if factor < 0 {
		return nil, fmt.Errorf("deciding the replication factor: %d is negative", factor)
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's brokers: %w", err)
	}
	return newTopicReplication(factor, len(md.Brokers)), nil
}

func newTopicReplication(factor, brokers int) *TopicReplication {
	r := &TopicReplication{Factor: factor, Brokers: brokers, Asked: factor}
	if factor == 0 {
		r.Factor = DefaultReplicationFactor(brokers)
	}
	return r
}

// Configs returns a copy of configs with min.insync.replicas set to
// MinInsyncReplicas when the factor is MaxDefaultReplicationFactor or
// more, unless configs sets it.
func (r *TopicReplication) Configs(configs map[string]*string) map[string]*string {
	out := maps.Clone(configs)
	if r.Factor < MaxDefaultReplicationFactor {
		return out
	}
	if out == nil {
		out = make(map[string]*string, 1)
	}
	if _, ok := out["min.insync.replicas"]; !ok {
		out["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(MinInsyncReplicas))
	}
	return out
}

// CreateTopics creates topics with partitions partitions each (-1: the
// broker's default), the replication factor and configs (with
// min.insync.replicas, see Configs). As kadm's, the error is the
// request's, and each topic's is in its response: a factor above the
// brokers is every topic's *ReplicationFactorError, without a request,
// as is the broker's INVALID_REPLICATION_FACTOR. Topics that exist come
// back with kerr.TopicAlreadyExists.
func (r *TopicReplication) CreateTopics(ctx context.Context, adm *kadm.Client, partitions int32, configs map[string]*string, topics ...string) (kadm.CreateTopicResponses, error) {
	if r.Factor > r.Brokers {
		resp := make(kadm.CreateTopicResponses, len(topics))
		for _, t := range topics {
			resp[t] = kadm.CreateTopicResponse{Topic: t, Err: &ReplicationFactorError{Topic: t, Factor: r.Factor, Brokers: r.Brokers}}
		}
		return resp, nil
	}
	resp, err := adm.CreateTopics(ctx, partitions, int16(r.Factor), r.Configs(configs), topics...)
	if err != nil {
		return nil, err
	}
	for t, tr := range resp {
		if errors.Is(tr.Err, kerr.InvalidReplicationFactor) {
			tr.Err = &ReplicationFactorError{Topic: t, Factor: r.Factor, Brokers: r.Brokers, Err: tr.Err}
			resp[t] = tr
		}
	}
	return resp, nil
}

// CreateTopic is CreateTopics for one topic; the topic's error is in the
// response's Err.
func (r *TopicReplication) CreateTopic(ctx context.Context, adm *kadm.Client, partitions int32, configs map[string]*string, topic string) (kadm.CreateTopicResponse, error) {
	resp, err := r.CreateTopics(ctx, adm, partitions, configs, topic)
	if err != nil {
		return kadm.CreateTopicResponse{}, err
	}
	return resp.On(topic, nil)
}

// WarnIfDiffers logs a warning, once per topic, when the existing topic
// d has another replication factor than r's. Such a topic is left as it
// is: Braid does not alter topics.
func (r *TopicReplication) WarnIfDiffers(log *slog.Logger, d kadm.TopicDetail) {
	if d.Err != nil || len(d.Partitions) == 0 {
		return
	}
	have := d.Partitions.NumReplicas()
	if have == r.Factor {
		return
	}
	r.mu.Lock()
	if r.warned == nil {
		r.warned = make(map[string]bool)
	}
	first := !r.warned[d.Topic]
	r.warned[d.Topic] = true
	r.mu.Unlock()
	if first && log != nil {
		log.Warn("topic exists with another replication factor; leaving it as it is",
			"topic", d.Topic, "replication_factor", have, "expected_replication_factor", r.Factor, "brokers", r.Brokers)
	}
}

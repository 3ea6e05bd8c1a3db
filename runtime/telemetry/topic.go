package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicPartitions is the telemetry topic's partition count when this
// package creates it: reports are keyed by process, and a handful of
// partitions spread a large application's over the brokers.
const topicPartitions = 6

// topicRetention is how long the telemetry topic keeps reports when this
// package creates it: a Reader starts a minute back, and the rest is for
// whoever debugs a failover after the fact.
const topicRetention = "3600000" // an hour, in ms

// EnsureTopic creates the telemetry topic with its defaults, unless it
// exists: topicPartitions partitions, an hour's retention, and the
// replication of every topic Braid creates (streams.ReplicationFor, one
// metadata request): replicationFactor, or with 0 min(3, brokers), with
// min.insync.replicas=2 at 3 or more. A topic that exists with another
// factor is left as it is, with a warning on log (when not nil).
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string, replicationFactor int, log *slog.Logger) error {
	adm := kadm.NewClient(cl)
	repl, err := streams.ReplicationFor(ctx, adm, replicationFactor)
	if err != nil {
		return fmt.Errorf("creating telemetry topic %q: %w", topic, err)
	}
	retention, policy := topicRetention, "delete"
	resp, err := repl.CreateTopic(ctx, adm, topicPartitions,
		map[string]*string{"retention.ms": &retention, "cleanup.policy": &policy}, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		if details, err := adm.ListTopics(ctx, topic); err == nil {
			repl.WarnIfDiffers(log, details[topic])
		}
		return nil
	}
	var rfe *streams.ReplicationFactorError
	if errors.As(err, &rfe) {
		return rfe // it names the topic
	}
	if err != nil {
		return fmt.Errorf("creating telemetry topic %q: %w", topic, err)
	}
	return nil
}

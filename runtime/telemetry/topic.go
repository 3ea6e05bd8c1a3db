package telemetry

import (
	"context"
	"errors"
	"fmt"

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
// exists.
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	retention, policy := topicRetention, "delete"
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, topicPartitions, -1,
		map[string]*string{"retention.ms": &retention, "cleanup.policy": &policy}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating telemetry topic %q: %w", topic, err)
	}
	return nil
}

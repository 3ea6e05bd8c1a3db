package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// DeleteTopics deletes topics from any Kafka cluster (this broker or
// another) and returns once its metadata no longer has them. Kafka
// deletes topics asynchronously: for a moment after DeleteTopics answers,
// creating a topic of the same name fails with TOPIC_ALREADY_EXISTS, so
// whoever deletes topics to create them again waits here. It waits until
// ctx ends at most.
func DeleteTopics(ctx context.Context, adm *kadm.Client, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	resp, err := adm.DeleteTopics(ctx, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("deleting topics %v: %w", topics, err)
	}
	for {
		left, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return fmt.Errorf("waiting for topics %v to be deleted: %w", topics, err)
		}
		if !slices.ContainsFunc(left.Sorted(), func(d kadm.TopicDetail) bool { return d.Err == nil }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for topics %v to be deleted: %w", topics, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

package telemetry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEnsureTopicReplication: the telemetry topic is replicated as the
// topics the runtime creates are (streams.TopicReplication).
func TestEnsureTopicReplication(t *testing.T) {
	for _, tc := range []struct {
		name     string
		brokers  int
		asked    int
		existing int16 // the topic exists with this factor, when > 0
		wantRF   int
		wantISR  string
		wantErr  bool
		wantWarn bool
	}{
		{name: "three brokers", brokers: 3, wantRF: 3, wantISR: "2"},
		{name: "one broker", brokers: 1, wantRF: 1},
		{name: "asked above the brokers", brokers: 1, asked: 2, wantErr: true},
		{name: "exists with factor 1", brokers: 3, existing: 1, wantRF: 1, wantWarn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(tc.brokers))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, adm := context.Background(), kadm.NewClient(cl)
			if tc.existing > 0 {
				if _, err := adm.CreateTopic(ctx, 1, tc.existing, nil, DefaultTopic); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			err = EnsureTopic(ctx, cl, DefaultTopic, tc.asked, slog.New(slog.NewTextHandler(&logs, nil)))
			var rfe *streams.ReplicationFactorError
			if tc.wantErr {
				if !errors.As(err, &rfe) || rfe.Topic != DefaultTopic || rfe.Factor != tc.asked || rfe.Brokers != tc.brokers {
					t.Fatalf("EnsureTopic = %v, want a *ReplicationFactorError for %s", err, DefaultTopic)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			details, err := adm.ListTopics(ctx, DefaultTopic)
			if err != nil {
				t.Fatal(err)
			}
			if got := details[DefaultTopic].Partitions.NumReplicas(); got != tc.wantRF {
				t.Errorf("replication factor %d, want %d", got, tc.wantRF)
			}
			configs, err := adm.DescribeTopicConfigs(ctx, DefaultTopic)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := configs.On(DefaultTopic, nil)
			if err != nil {
				t.Fatal(err)
			}
			isr := ""
			for _, c := range rc.Configs {
				if c.Key == "min.insync.replicas" && c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
					isr = *c.Value
				}
			}
			if isr != tc.wantISR {
				t.Errorf("min.insync.replicas set to %q, want %q", isr, tc.wantISR)
			}
			if warned := strings.Contains(logs.String(), "another replication factor"); warned != tc.wantWarn {
				t.Errorf("warned %v, want %v; log:\n%s", warned, tc.wantWarn, logs.String())
			}
		})
	}
}

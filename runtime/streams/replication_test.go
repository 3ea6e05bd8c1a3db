package streams_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDefaultReplicationFactor(t *testing.T) {
	for _, tc := range []struct{ brokers, want int }{
		{0, 1}, {1, 1}, {2, 2}, {3, 3}, {4, 3}, {9, 3},
	} {
		if got := streams.DefaultReplicationFactor(tc.brokers); got != tc.want {
			t.Errorf("DefaultReplicationFactor(%d) = %d, want %d", tc.brokers, got, tc.want)
		}
	}
}

func TestReplicationConfigs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		factor  int
		configs map[string]*string
		want    map[string]string
	}{
		{name: "factor 1", factor: 1, configs: map[string]*string{"cleanup.policy": kadm.StringPtr("compact")},
			want: map[string]string{"cleanup.policy": "compact"}},
		{name: "factor 2", factor: 2, want: map[string]string{}},
		{name: "factor 3", factor: 3, configs: map[string]*string{"cleanup.policy": kadm.StringPtr("compact")},
			want: map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "2"}},
		{name: "factor 5", factor: 5, want: map[string]string{"min.insync.replicas": "2"}},
		{name: "asked min.insync.replicas kept", factor: 3, configs: map[string]*string{"min.insync.replicas": kadm.StringPtr("3")},
			want: map[string]string{"min.insync.replicas": "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &streams.TopicReplication{Factor: tc.factor, Brokers: 5}
			before := len(tc.configs)
			got := r.Configs(tc.configs)
			if len(tc.configs) != before {
				t.Errorf("Configs changed its argument")
			}
			if len(got) != len(tc.want) {
				t.Errorf("Configs = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] == nil || *got[k] != v {
					t.Errorf("Configs[%q] = %v, want %q", k, got[k], v)
				}
			}
		})
	}
}

// startCluster starts a kfake cluster of n brokers for one test: the
// embedded broker (runtime/broker) runs one.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(n), kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// replicationTopology repartitions and counts: one repartition topic
// and one changelog.
func replicationTopology(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	b.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		Repartition(streams.Named("rekeyed")).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "counts"})).
		ToStream().To("counted", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// logBuffer is a slog handler's writer that tests may read while the App
// writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestReplicationOfInternalTopics(t *testing.T) {
	const app = "repl"
	internal := []string{app + "-rekeyed-repartition", app + "-counts-changelog"}
	for _, tc := range []struct {
		name     string
		brokers  int
		asked    int
		existing int16 // the changelog exists with this factor, when > 0
		wantRF   int
		wantISR  string // min.insync.replicas set on the topic, "" for none
		wantWarn bool
	}{
		{name: "three brokers default", brokers: 3, wantRF: 3, wantISR: "2"},
		{name: "one broker default", brokers: 1, wantRF: 1},
		{name: "two brokers default", brokers: 2, wantRF: 2},
		{name: "three brokers asked 2", brokers: 3, asked: 2, wantRF: 2},
		{name: "changelog exists with factor 1", brokers: 3, existing: 1, wantRF: 3, wantISR: "2", wantWarn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := startCluster(t, tc.brokers)
			cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ctx := context.Background()
			for _, topic := range []string{"clicks", "counted"} {
				if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
					t.Fatal(err)
				}
			}
			if tc.existing > 0 {
				if _, err := adm.CreateTopic(ctx, 2, tc.existing, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, internal[1]); err != nil {
					t.Fatal(err)
				}
			}
			logs := &logBuffer{}
			rec := &recorder{}
			cfg := streams.Config{
				ApplicationID: app, Brokers: addrs, StateDir: t.TempDir(),
				CommitInterval: 100 * time.Millisecond, SessionTimeout: 6 * time.Second,
				ReplicationFactor: tc.asked, Hooks: []streams.Hook{rec},
				Logger: slog.New(slog.NewTextHandler(logs, nil)),
			}
			a, err := streams.New(replicationTopology(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			runApp(t, a)
			// Tasks are assigned once the internal topics exist.
			waitFor(t, 20*time.Second, "a task assigned", func() bool { return len(rec.assignedTasks()) > 0 })

			details, err := adm.ListTopics(ctx, internal...)
			if err != nil {
				t.Fatal(err)
			}
			configs, err := adm.DescribeTopicConfigs(ctx, internal...)
			if err != nil {
				t.Fatal(err)
			}
			for _, topic := range internal {
				d := details[topic]
				if d.Err != nil {
					t.Fatalf("topic %s: %v", topic, d.Err)
				}
				wantRF, wantISR := tc.wantRF, tc.wantISR
				if topic == internal[1] && tc.existing > 0 {
					wantRF, wantISR = int(tc.existing), "" // left as it was
				}
				if got := d.Partitions.NumReplicas(); got != wantRF {
					t.Errorf("topic %s: replication factor %d, want %d", topic, got, wantRF)
				}
				rc, err := configs.On(topic, nil)
				if err != nil {
					t.Fatal(err)
				}
				if isr := topicMinISR(rc); isr != wantISR {
					t.Errorf("topic %s: min.insync.replicas set to %q, want %q", topic, isr, wantISR)
				}
			}
			warns := strings.Count(logs.String(), "topic exists with another replication factor")
			switch {
			case tc.wantWarn && warns != 1:
				t.Errorf("%d warnings about the existing changelog, want 1; log:\n%s", warns, logs)
			case tc.wantWarn && !strings.Contains(logs.String(), "topic="+internal[1]+" replication_factor=1 expected_replication_factor=3"):
				t.Errorf("the warning names neither the topic nor both factors; log:\n%s", logs)
			case !tc.wantWarn && warns != 0:
				t.Errorf("%d warnings about existing topics, want none; log:\n%s", warns, logs)
			}
		})
	}
}

func TestReplicationFactorAboveBrokers(t *testing.T) {
	addrs := startCluster(t, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 2, 1, nil, "clicks"); err != nil {
		t.Fatal(err)
	}
	cfg := streams.Config{
		ApplicationID: "repl-too-many", Brokers: addrs, StateDir: t.TempDir(),
		SessionTimeout: 6 * time.Second, ReplicationFactor: 3, Logger: testLogger(),
	}
	a, err := streams.New(replicationTopology(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = runToError(t, a, 20*time.Second)
	var rfe *streams.ReplicationFactorError
	if !errors.As(err, &rfe) {
		t.Fatalf("Run = %v, want a *ReplicationFactorError", err)
	}
	if !strings.HasPrefix(rfe.Topic, "repl-too-many-") || rfe.Factor != 3 || rfe.Brokers != 1 {
		t.Errorf("error %+v, want an internal topic, factor 3, 1 broker", rfe)
	}
	for _, want := range []string{rfe.Topic, "replication factor 3 asked", "the cluster has 1 broker;"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestReplicationOnTheCluster checks the default on the broker under test:
// on the embedded broker and a one-node Kafka, factor 1; on a three-node
// Kafka (BRAID_TEST_KAFKA_NODES=3, as the real-Kafka pass runs it), factor
// 3 and min.insync.replicas=2 on the repartition topic and the changelog.
func TestReplicationOnTheCluster(t *testing.T) {
	const app = "repl-cluster"
	internal := []string{app + "-rekeyed-repartition", app + "-counts-changelog"}
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "counted", 2)
	rec := &recorder{}
	cfg := testConfig(b, app)
	cfg.StateDir = t.TempDir()
	cfg.Hooks = []streams.Hook{rec}
	a, err := streams.New(replicationTopology(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runApp(t, a)
	waitFor(t, 60*time.Second, "a task assigned", func() bool { return len(rec.assignedTasks()) > 0 })

	wantRF := streams.DefaultReplicationFactor(b.Nodes())
	wantISR := ""
	if wantRF >= 3 {
		wantISR = "2"
	}
	ctx := context.Background()
	adm := admin(t, b)
	details, err := adm.ListTopics(ctx, internal...)
	if err != nil {
		t.Fatal(err)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, internal...)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range internal {
		if got := details[topic].Partitions.NumReplicas(); got != wantRF {
			t.Errorf("topic %s on %d brokers: replication factor %d, want %d", topic, b.Nodes(), got, wantRF)
		}
		rc, err := configs.On(topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		if isr := topicMinISR(rc); isr != wantISR {
			t.Errorf("topic %s on %d brokers: min.insync.replicas set to %q, want %q", topic, b.Nodes(), isr, wantISR)
		}
	}
	t.Logf("%d brokers: replication factor %d, min.insync.replicas %q", b.Nodes(), wantRF, wantISR)
}

// topicMinISR is the min.insync.replicas set on the topic itself, "" when
// the topic does not set it.
func topicMinISR(rc kadm.ResourceConfig) string {
	for _, c := range rc.Configs {
		if c.Key == "min.insync.replicas" && c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

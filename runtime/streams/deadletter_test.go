package streams_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

func jsonPassThrough(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	b.Stream([]string{"dl-in"}, streams.WithSerdes(streams.String, streams.JSON)).
		MapValues(func(v any) (any, error) { return v, nil }).
		To("dl-out", streams.WithSerdes(streams.String, streams.JSON))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestDeadLetterTopic: a record skipped by LogAndContinue lands, bytes
// unchanged, in the dead-letter topic with headers naming where it came
// from and why.
func TestDeadLetterTopic(t *testing.T) {
	b := startBroker(t)
	for _, topic := range []string{"dl-in", "dl-out", "dl-dead"} {
		createTopic(t, b, topic, 1)
	}
	var recs []*kgo.Record
	for i, v := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`, `not json`, `{"n":5}`, `{"n":6}`} {
		recs = append(recs, &kgo.Record{Topic: "dl-in", Key: key(i), Value: []byte(v), Headers: []kgo.RecordHeader{{Key: "origin", Value: []byte("test")}}})
	}
	produce(t, b, recs...)

	cfg := testConfig(b, "dead-letters")
	cfg.DeserializationErrors = streams.LogAndContinue
	cfg.DeadLetterTopic = "dl-dead"
	app, err := streams.New(jsonPassThrough(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runApp(t, app)
	if out := consumeN(t, b, "dl-out", 5, 20*time.Second); len(out) != 5 {
		t.Fatalf("%d outputs, want 5", len(out))
	}
	dead := consumeN(t, b, "dl-dead", 1, 20*time.Second)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	d := dead[0]
	if string(d.Value) != "not json" || string(d.Key) != string(key(3)) {
		t.Errorf("dead letter %q=%q, want the skipped record's bytes %q=%q", d.Key, d.Value, key(3), "not json")
	}
	headers := map[string]string{}
	for _, h := range d.Headers {
		headers[h.Key] = string(h.Value)
	}
	want := map[string]string{"origin": "test", "braid.task": "0_0", "braid.topic": "dl-in", "braid.partition": "0", "braid.offset": "3"}
	for k, v := range want {
		if headers[k] != v {
			t.Errorf("header %s = %q, want %q", k, headers[k], v)
		}
	}
	if !strings.Contains(headers["braid.error"], "decoding value") {
		t.Errorf("header braid.error = %q, want the decoding error", headers["braid.error"])
	}
}

func TestMissingDeadLetterTopic(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "dl-in", 1)
	cfg := testConfig(b, "no-dead-letters")
	cfg.DeadLetterTopic = "nowhere"
	app, err := streams.New(jsonPassThrough(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = app.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), `dead-letter topic "nowhere" does not exist`) {
		t.Fatalf("Run = %v, want an error naming the missing dead-letter topic", err)
	}
}

package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRepartitionTopicsArePurged: once records of a repartition topic are
// committed they are deleted, so the topic does not grow without bound.
func TestRepartitionTopicsArePurged(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "purge-in", 2)
	createTopic(t, b, "purge-out", 2)
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Topic: "purge-in", Key: key(i), Value: []byte(fmt.Sprintf("group-%d", i%7))})
	}
	produce(t, b, recs...)

	builder := streams.NewBuilder()
	builder.Stream([]string{"purge-in"}, streams.WithSerdes(streams.String, streams.String)).
		SelectKey(func(_, v any) (any, error) { return v, nil }).
		Repartition(streams.Named("by-group")).
		To("purge-out", streams.WithSerdes(streams.String, streams.String))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(b, "purger")
	cfg.RepartitionPurgeInterval = time.Millisecond
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runApp(t, app)
	consumeN(t, b, "purge-out", 200, 20*time.Second)

	adm := kadm.NewClient(newClient(t, b))
	topic := "purger-by-group-repartition"
	waitFor(t, 20*time.Second, "the repartition topic purged to its end", func() bool {
		starts, err := adm.ListStartOffsets(context.Background(), topic)
		if err != nil || starts.Error() != nil {
			return false
		}
		ends, err := adm.ListEndOffsets(context.Background(), topic)
		if err != nil || ends.Error() != nil {
			return false
		}
		var start, end int64
		starts.Each(func(o kadm.ListedOffset) { start += o.Offset })
		ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
		return end == 200 && start == end
	})
}

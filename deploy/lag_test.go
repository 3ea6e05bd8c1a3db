package deploy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/monitor"
)

// flagsDesign filters readings on value.flag, which the records make a
// number: the filter fails at run time, on the first record, in a way no
// validation can see before data.
const flagsDesign = `{"id": "flags", "name": "flags", "version": 1,
  "nodes": [
    {"id": "source", "kind": "source-stream", "params": {"topic": "readings", "keySerde": "string", "valueSerde": "json"}, "position": {"x": 0, "y": 0}},
    {"id": "filter", "kind": "filter", "params": {"predicate": "value.flag"}, "position": {"x": 220, "y": 0}},
    {"id": "sink", "kind": "sink", "params": {"topic": "flagged", "keySerde": "string", "valueSerde": "json"}, "position": {"x": 440, "y": 0}}
  ],
  "edges": [
    {"from": "source", "fromPort": "out", "to": "filter", "toPort": "in"},
    {"from": "filter", "fromPort": "out", "to": "sink", "toPort": "in"}
  ]}`

// TestFailedTaskShowsItsLagFromTheBroker: an instance whose filter fails
// on the first record consumed nothing; its tasks show on it, failed,
// with the lag the broker gives (the end offsets less the group's
// committed offsets, none here), and the deployment's lag, which the
// source's badge and the lag chart show, counts every record produced,
// not the 0 the dead tasks last reported.
func TestFailedTaskShowsItsLagFromTheBroker(t *testing.T) {
	h := start(t)
	if _, _, err := h.store.Import([]byte(flagsDesign)); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.DefaultProduceTopic("readings"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "readings"); err != nil {
		t.Fatal(err)
	}
	const produced = 20
	for i := range produced {
		v := fmt.Sprintf(`{"flag": %d}`, i+1)
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	standbys := 0
	info, err := h.m.Deploy(deploy.Request{Design: "flags", Instances: 1, Standbys: &standbys})
	if err != nil {
		t.Fatal(err)
	}

	var last monitor.Deployment
	waitFor(t, time.Minute, "the failed instance's tasks with the broker's lag", func() bool {
		d, ok := h.deployment(info.ID)
		if !ok || len(d.Instances) != 1 || d.Instances[0].State != "failed" {
			return false
		}
		last = d
		var lag int64
		for _, task := range d.Instances[0].Tasks {
			if task.State != "failed" || task.Lag < 0 {
				return false
			}
			lag += task.Lag
		}
		return len(d.Instances[0].Tasks) == 2 && lag == produced
	})
	waitFor(t, 10*time.Second, "a throughput point with the broker's lag", func() bool {
		d, _ := h.deployment(info.ID)
		last = d
		return len(d.Throughput) > 0 && d.Throughput[len(d.Throughput)-1].Lag == produced
	})
	if last.Instances[0].Error == "" {
		t.Errorf("the failed instance says no error: %+v", last.Instances[0])
	}
}

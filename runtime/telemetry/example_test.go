package telemetry_test

import (
	"context"
	"log"
	"sync"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/braidstream/braid/runtime/telemetry"
)

// A Supervisor's instances reported on the telemetry topic: the hook in
// their config, the Supervisor attached, and the Publisher run beside it
// and stopped after it, so that its last report shows them stopped.
func ExampleNewPublisher() {
	b := streams.NewBuilder()
	b.Stream([]string{"words"}, streams.WithSerdes(streams.String, streams.String)).To("words-copy")
	topology, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	brokers := []string{"127.0.0.1:9092"}
	pub, err := telemetry.NewPublisher(telemetry.PublisherConfig{Brokers: brokers, Topology: topology,
		Deployment: telemetry.Deployment{ApplicationID: "word-copy", Instances: 2}})
	if err != nil {
		log.Fatal(err)
	}
	sup, err := streams.NewSupervisor(topology, streams.SupervisorConfig{InstanceIDs: []string{"a", "b"},
		Config: streams.Config{ApplicationID: "word-copy", Brokers: brokers, Hooks: []streams.Hook{pub.Hook()}}})
	if err != nil {
		log.Fatal(err)
	}
	pub.Attach(sup)
	reports, stopReports := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = pub.Run(reports) })
	err = sup.Run(context.Background()) // until its context ends
	stopReports()
	wg.Wait()
	if err != nil {
		log.Fatal(err)
	}
}

package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// OwnPrefix begins the name of every topic, group and application a bench
// creates. On a cluster named by --brokers, a bench deletes the topics and
// groups with this prefix before it runs, and nothing else.
const OwnPrefix = "bench-"

// cluster is the broker a bench runs against.
type cluster struct {
	brokers []string
	// name says which, for the report's header: "embedded broker" or
	// "cluster at host:port (N brokers)".
	name  string
	close func()
}

// openCluster returns the cluster brokers names, cleared of the benches'
// own topics and groups (OwnPrefix) so that a run starts as on a new
// broker, or, when brokers is empty, an embedded broker started with cfg.
func openCluster(ctx context.Context, brokers []string, cfg broker.Config) (*cluster, error) {
	if len(brokers) == 0 {
		b, err := startBroker(cfg)
		if err != nil {
			return nil, fmt.Errorf("starting the embedded broker: %w", err)
		}
		return &cluster{brokers: b.Addrs(), name: "embedded broker", close: func() { b.Close() }}, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, fmt.Errorf("creating a client of %s: %w", strings.Join(brokers, ","), err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster at %s: %w", strings.Join(brokers, ","), err)
	}
	if err := clearOwn(ctx, adm); err != nil {
		return nil, fmt.Errorf("clearing the benches' topics and groups (%s*) at %s: %w", OwnPrefix, strings.Join(brokers, ","), err)
	}
	name := fmt.Sprintf("cluster at %s (%d brokers)", strings.Join(brokers, ","), len(md.Brokers))
	return &cluster{brokers: slices.Clone(brokers), name: name, close: func() {}}, nil
}

// startBroker starts the embedded broker a bench runs on, with cfg but
// for its retention pass, put off for a day unless cfg sets it: by
// default one runs every 30 s and compacts the compacted topics in the
// broker's request loop, every record of them, which stalls every client
// meanwhile (a join's buffers' changelogs hold every record of the run)
// and leaves a later round fewer changelog records to restore than an
// earlier one (bench restore saw 2,393,383 of 3,000,000). A bench
// measures Braid against its ceiling, not the broker's housekeeping.
func startBroker(cfg broker.Config) (*broker.Broker, error) {
	if cfg.RetentionCheckInterval == 0 {
		cfg.RetentionCheckInterval = 24 * time.Hour
	}
	return broker.Start(cfg)
}

// clearOwn deletes the groups and topics whose names begin with OwnPrefix
// and waits until the topics are gone: deletion is asynchronous on Kafka,
// and the bench is about to create topics of the same names.
func clearOwn(ctx context.Context, adm *kadm.Client) error {
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("listing groups: %w", err)
	}
	var own []string
	for _, g := range groups.Groups() {
		if strings.HasPrefix(g, OwnPrefix) {
			own = append(own, g)
		}
	}
	if len(own) > 0 {
		resp, err := adm.DeleteGroups(ctx, own...)
		if err != nil {
			return fmt.Errorf("deleting groups: %w", err)
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				return fmt.Errorf("deleting group %s: %w (is an earlier run still going?)", r.Group, r.Err)
			}
		}
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics: %w", err)
	}
	var names []string
	for _, t := range topics.Names() {
		if strings.HasPrefix(t, OwnPrefix) {
			names = append(names, t)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return broker.DeleteTopics(ctx, adm, names...)
}

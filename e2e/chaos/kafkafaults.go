package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker faults of an Apache Kafka cluster (Options.Kafka, three
// nodes): one node killed with SIGKILL (the leader of the most input,
// changelog and sink partitions, or the active controller) and started
// again, one node stopped with SIGSTOP and continued, or every node
// stopped and started again on its data dir and port. With one node of
// three down the others take over its partitions, so after a node's
// kill every worker must commit while it is still down (During), and
// again within MaxResume of its return (Resume).

// KafkaFaults are the faults `make chaos CHAOS_ARGS=--kafka` runs, each
// under both guarantees. A node killed stays down 20 s: Kafka fences a
// broker that stopped heartbeating after broker.session.timeout.ms (9 s)
// and only then elects new leaders for its partitions.
var KafkaFaults = []string{"leader-kill-20s", "stop-15s", "controller-kill-20s", "cluster-restart-10s"}

// kafkaAllowance is what the producer's schedule adds on Kafka, so that
// inputs still come when the workers' resume is timed: its group takes
// longer to settle than the embedded broker's (15 s), and a node takes up
// to half a minute to start again on a loaded machine (measured: 20 s on
// two busy cores), which a stopped one does not; a whole cluster also
// takes 10 s to stop cleanly and up to 30 s to start.
func kafkaAllowance(kind faultKind) time.Duration {
	switch kind {
	case stopCont:
		return 15 * time.Second
	case clusterRestart:
		return 60 * time.Second
	}
	return 45 * time.Second
}

// check says why f cannot run on the broker kafka says.
func (f Fault) check(kafka bool) error {
	switch {
	case kafka && !f.kind.onKafka():
		return fmt.Errorf("broker fault %s is one of the embedded broker; on Kafka: leader-kill-D, stop-D, controller-kill-D or cluster-restart-D", f)
	case !kafka && !f.kind.onEmbedded():
		return fmt.Errorf("broker fault %s needs Apache Kafka (--kafka); on the embedded broker: kill-restart-D, stop-D or cut-D", f)
	}
	return nil
}

// clearKafka clears k of the last run's topics and groups and returns its
// bootstrap addresses.
func clearKafka(k *brokertest.Kafka, say func(string, ...any)) ([]string, error) {
	if err := k.Reset(); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	say("Apache Kafka, %d nodes at %s, cleared of topics and groups", len(k.Addrs), strings.Join(k.Addrs, ","))
	return slices.Clone(k.Addrs), nil
}

// injectKafka does f to the cluster k and returns when the cluster is
// whole again: the moment the workers' resume is timed from. While a node
// is down or stopped, it times each worker's first commit into
// rep.During. A node it took down is started or continued again even when
// the run ends meanwhile, so that the next run has the whole cluster.
func injectKafka(ctx context.Context, k *brokertest.Kafka, f Fault, ws *workers, rep *FaultReport, say func(string, ...any)) (time.Time, error) {
	if f.kind == clusterRestart {
		return restartCluster(ctx, k, f, say)
	}
	node, why, err := pickNode(ctx, k, f.kind)
	if err != nil {
		return time.Time{}, err
	}
	action, undo := "kill", "start"
	if f.kind == stopCont {
		action, undo = "pause", "resume"
	}
	began := time.Now()
	if err := k.Node(node, action); err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", f, err)
	}
	undone := false
	defer func() {
		if !undone {
			_ = k.Node(node, undo)
		}
	}()
	verb := map[string]string{"kill": "killed with SIGKILL", "pause": "stopped with SIGSTOP"}[action]
	say("node %d (%s) %s; timing every worker's first commit while it is down", node, why, verb)
	rep.DuringRequired = f.kind != stopCont
	during, derr := waitCommits(ctx, ws, began, 1, f.For, fmt.Sprintf("during %s", f))
	rep.During = make(map[string]time.Duration)
	for w, t := range during {
		rep.During[w] = t.Sub(began)
	}
	if derr != nil && ctx.Err() == nil {
		if aerr := ws.checkAlive(); aerr != nil {
			return time.Time{}, aerr
		}
		say("during %s not every worker committed: %v", f, firstLine(derr))
	} else if derr == nil {
		say("while node %d was down every worker committed: %s", node, durations(rep.During))
	}
	if err := sleepCtx(ctx, time.Until(began.Add(f.For))); err != nil {
		return time.Time{}, err
	}
	undone = true
	if err := k.Node(node, undo); err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", f, err)
	}
	say("node %d is back (%s); waiting for every worker's next commit", node, undo)
	return time.Now(), nil
}

// restartCluster stops every node of k (SIGTERM, a clean shutdown),
// waits f.For and starts them again, all at once: a node waits for a
// quorum of controllers to start.
func restartCluster(ctx context.Context, k *brokertest.Kafka, f Fault, say func(string, ...any)) (time.Time, error) {
	nodes := len(k.Addrs)
	all := func(action string) error {
		errs := make([]error, nodes)
		var wg sync.WaitGroup
		for i := range nodes {
			wg.Go(func() { errs[i] = k.Node(i+1, action) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := all("stop"); err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", f, err)
	}
	say("every node of the cluster stopped; starting them again in %v", f.For)
	err := sleepCtx(ctx, f.For)
	// Started even when the run ends meanwhile, for the next run.
	if serr := all("start"); serr != nil {
		return time.Time{}, fmt.Errorf("%s: starting the nodes again: %w", f, serr)
	}
	if err != nil {
		return time.Time{}, err
	}
	say("every node is back; waiting for every worker's next commit")
	return time.Now(), nil
}

// pickNode returns the node (its id, from 1, as the cluster's node ids
// are) that fault kind hits, and why it is that one: the active
// controller, or for the others the node other than it that leads the
// most partitions of the chaos application's input, changelog and sink
// topics.
func pickNode(ctx context.Context, k *brokertest.Kafka, kind faultKind) (int, string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...))
	if err != nil {
		return 0, "", fmt.Errorf("finding the node to fault: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	controller, err := activeController(ctx, cl)
	if err != nil {
		return 0, "", err
	}
	led, err := leaders(ctx, kadm.NewClient(cl))
	if err != nil {
		return 0, "", err
	}
	if kind == controllerKill {
		return int(controller), fmt.Sprintf("the active controller, leading %s", ledText(led[controller])), nil
	}
	best := int32(-1)
	for _, n := range slices.Sorted(maps.Keys(led)) {
		if n != controller && (best < 0 || led[n].total() > led[best].total()) {
			best = n
		}
	}
	if best < 0 {
		return 0, "", fmt.Errorf("finding the node to fault: no node but the controller (%d) leads a partition", controller)
	}
	return int(best), fmt.Sprintf("leading %s; node %d is the active controller", ledText(led[best]), controller), nil
}

// activeController asks the cluster for the leader of its metadata quorum
// (DescribeQuorum, which a broker forwards to the controllers): the
// active controller. Metadata's ControllerID is a random broker under
// KRaft.
func activeController(ctx context.Context, cl *kgo.Client) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
			err = errors.New("the answer names no metadata partition")
		}
		if err == nil {
			part := resp.Topics[0].Partitions[0]
			if err = kerr.ErrorForCode(part.ErrorCode); err == nil && part.LeaderID >= 0 {
				return part.LeaderID, nil
			}
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("finding the active controller: %w (last: %v)", ctx.Err(), err)
		}
		_ = sleepCtx(ctx, 250*time.Millisecond)
	}
}

// ledPartitions counts the partitions a node leads, by kind of topic.
type ledPartitions struct{ input, changelog, sink int }

func (l ledPartitions) total() int { return l.input + l.changelog + l.sink }

func ledText(l ledPartitions) string {
	return fmt.Sprintf("%d input, %d changelog and %d sink partitions", l.input, l.changelog, l.sink)
}

// leaders counts, per node, the partitions of the chaos application's
// topics it leads.
func leaders(ctx context.Context, adm *kadm.Client) (map[int32]ledPartitions, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the partitions' leaders: %w", err)
	}
	led := make(map[int32]ledPartitions)
	for _, b := range md.Brokers {
		led[b.NodeID] = ledPartitions{}
	}
	for _, t := range md.Topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			if p.Leader < 0 {
				continue
			}
			l := led[p.Leader]
			switch {
			case t.Topic == InputTopic:
				l.input++
			case slices.Contains(outputTopics, t.Topic):
				l.sink++
			case strings.HasPrefix(t.Topic, AppID+"-") && strings.HasSuffix(t.Topic, "-changelog"):
				l.changelog++
			default:
				continue
			}
			led[p.Leader] = l
		}
	}
	return led, nil
}

// durations lists per-worker durations in the workers' order.
func durations(ds map[string]time.Duration) string {
	var out []string
	for _, w := range slices.Sorted(maps.Keys(ds)) {
		out = append(out, fmt.Sprintf("%s in %v", w, ds[w].Round(time.Millisecond)))
	}
	return strings.Join(out, ", ")
}

// firstLine is an error's first line (waitCommits' errors go on with log
// tails).
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

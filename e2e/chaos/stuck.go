package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// stuckReport says what a run whose group stopped committing looked like
// when it was given up on: the group as the broker describes it (its
// state, and each member's instance and partitions), the transactions the
// broker holds, and the goroutines of each live worker in Braid's runtime
// and of the broker's request loop. The logs' tails in a failure rarely
// say which of them waited for which: a group that never finishes a
// rebalance, a commit that never returns, and a request loop that never
// answers look alike from there. Asking for the stacks ends the
// processes, so this is the run's last act.
func stuckReport(ctx context.Context, adm *kadm.Client, ws *workers, brk *broker) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out strings.Builder
	out.WriteString(describeGroup(ctx, adm))
	out.WriteString(describeTransactions(ctx, adm))
	ws.mu.Lock()
	procs := slices.Clone(ws.procs)
	ws.mu.Unlock()
	for i, p := range procs {
		out.WriteString(p.stacks(ws.logPath(i), "braidstream/braid/runtime"))
	}
	if brk != nil {
		out.WriteString(brk.stacks(brk.logPath, "kfake.(*Cluster).run(", "broker.(*Broker).compactStable", "broker.(*Broker).holdTransactionalProduce"))
	}
	return out.String()
}

// describeGroup says the chaos group's state and members.
func describeGroup(ctx context.Context, adm *kadm.Client) string {
	groups, err := adm.DescribeGroups(ctx, AppID)
	if err == nil {
		err = groups.Error()
	}
	if err != nil {
		return fmt.Sprintf("--- the group %s could not be described: %v\n", AppID, err)
	}
	g := groups[AppID]
	var b strings.Builder
	fmt.Fprintf(&b, "--- the group %s: state %s, protocol %q, %d members\n", AppID, g.State, g.Protocol, len(g.Members))
	for _, m := range g.Members {
		instance := "-"
		if m.InstanceID != nil {
			instance = *m.InstanceID
		}
		assigned := "none"
		if c, ok := m.Assigned.AsConsumer(); ok {
			var parts []string
			for _, t := range c.Topics {
				parts = append(parts, fmt.Sprintf("%s%v", t.Topic, t.Partitions))
			}
			assigned = strings.Join(parts, " ")
		}
		fmt.Fprintf(&b, "    member %s instance %s client %s assigned %s\n", m.MemberID, instance, m.ClientID, assigned)
	}
	return b.String()
}

// describeTransactions says the state of every transactional id the
// broker knows.
func describeTransactions(ctx context.Context, adm *kadm.Client) string {
	txns, err := adm.DescribeTransactions(ctx)
	if err != nil {
		return fmt.Sprintf("--- the transactions could not be described: %v\n", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %d transactional ids\n", len(txns))
	for _, id := range slices.Sorted(maps.Keys(txns)) {
		t := txns[id]
		started := "-"
		if t.StartTimestamp > 0 {
			started = time.UnixMilli(t.StartTimestamp).UTC().Format("15:04:05.000")
		}
		fmt.Fprintf(&b, "    %s: %s, producer %d epoch %d, started %s, partitions %v, err %v\n",
			id, t.State, t.ProducerID, t.ProducerEpoch, started, t.Topics.Sorted(), t.Err)
	}
	return b.String()
}

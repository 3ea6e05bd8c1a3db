package streams

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaveGroupAsInstance removes the static member instanceID from the
// application's group (cfg.ApplicationID), as KIP-345's admin removal
// does: franz-go's client sends no LeaveGroup when a static member closes,
// so this asks the coordinator directly, with a short-lived client of its
// own (cfg's brokers and client options, for TLS and SASL). A member the
// group no longer knows counts as gone. It needs LeaveGroup v3 (Kafka
// 2.4+), the first that names members by instance id.
func leaveGroupAsInstance(ctx context.Context, cfg Config, instanceID string) error {
	opts := append([]kgo.Opt{}, cfg.ClientOptions...)
	opts = append(opts, kgo.SeedBrokers(cfg.Brokers...))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("leaving group %q as %q: creating client: %w", cfg.ApplicationID, instanceID, err)
	}
	defer cl.Close()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = cfg.ApplicationID
	m := kmsg.NewLeaveGroupRequestMember()
	m.InstanceID = kmsg.StringPtr(instanceID)
	m.Reason = kmsg.StringPtr("the instance stopped for good")
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err == nil {
		for _, m := range resp.Members {
			if merr := kerr.ErrorForCode(m.ErrorCode); merr != nil && merr != kerr.UnknownMemberID {
				err = merr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("leaving group %q as %q: %w", cfg.ApplicationID, instanceID, err)
	}
	return nil
}

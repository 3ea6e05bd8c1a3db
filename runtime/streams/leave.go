package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Removing members from the group on their behalf: a static member that
// stops for good (CloseAndLeave), whose client sends no LeaveGroup when it
// closes, and a dead instance that a Supervisor removes (detect.go). Both
// are KIP-345's admin removal: a LeaveGroup naming the member, sent by
// another client.

// errMemberGone says the group no longer had the member to remove: its
// session had timed out, or it had left on its own.
var errMemberGone = errors.New("the group has no such member")

// removeMember sends one LeaveGroup for the member of group with
// memberID ("" when unknown) and, for a static member, instanceID, and
// returns the first error of its answer; an unknown member wraps
// errMemberGone. Naming members needs LeaveGroup v3 (Kafka 2.4+); the
// top-level member id serves older brokers, which take one member.
func removeMember(ctx context.Context, cl *kgo.Client, group, memberID string, instanceID *string, reason string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.MemberID = memberID
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID, m.Reason = memberID, instanceID, &reason
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err == nil {
		for _, rm := range resp.Members {
			if err = kerr.ErrorForCode(rm.ErrorCode); err != nil {
				break
			}
		}
	}
	if errors.Is(err, kerr.UnknownMemberID) {
		err = fmt.Errorf("%w: %w", errMemberGone, err)
	}
	return err
}

// leaveGroupAsInstance removes the static member instanceID from the
// application's group (cfg.ApplicationID), with a short-lived client of
// its own (cfg's brokers and client options, for TLS and SASL). A member
// the group no longer knows counts as gone.
func leaveGroupAsInstance(ctx context.Context, cfg Config, instanceID string) error {
	opts := append([]kgo.Opt{}, cfg.ClientOptions...)
	opts = append(opts, kgo.SeedBrokers(cfg.Brokers...))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("leaving group %q as %q: creating client: %w", cfg.ApplicationID, instanceID, err)
	}
	defer cl.Close()
	err = removeMember(ctx, cl, cfg.ApplicationID, "", &instanceID, "the instance stopped for good")
	if err != nil && !errors.Is(err, errMemberGone) {
		return fmt.Errorf("leaving group %q as %q: %w", cfg.ApplicationID, instanceID, err)
	}
	return nil
}

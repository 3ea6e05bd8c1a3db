package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Failure detection.
//
// A crashed member says nothing: left alone, the group notices it only
// when its session times out (Config.SessionTimeout), and under
// exactly-once its open transaction holds back the last stable offset of
// every partition it wrote, so read-committed readers of the sinks wait
// until the broker aborts it at the transaction timeout. A Supervisor sees
// its instances die, so it waits for neither. This file owns what it does
// then: its own small client, the two requests it sends for a dead
// instance, and the label each failover carries of how its instance's
// failure was noticed (FailoverEvent.DetectedBy).
//
// For a dead instance that had joined the group, in this order:
//
//  1. under ExactlyOnce it initializes a producer id with the instance's
//     transactional id, which fences the dead producer and makes the
//     broker abort its open transaction: its sinks' readers move on, and
//     its pending transactional offset commit no longer holds up the
//     offsets the next owners of its tasks fetch;
//  2. it removes the member from the group (LeaveGroup by member id, and
//     by instance id under static membership), which starts the
//     rebalance at once.
//
// Both are bounded by the session timeout: past it the group has noticed
// on its own. A failure is logged and changes nothing but the label: the
// session timeout still removes the member, and the transaction timeout
// still aborts the transaction. The restarted instance later initializes
// the same transactional id again, with a higher epoch.

// How a failover's instance was noticed to be gone; see
// FailoverEvent.DetectedBy.
const (
	// DetectedBySupervisor: the Supervisor saw the instance die and
	// removed its member from the group.
	DetectedBySupervisor = "supervisor"
	// DetectedBySessionTimeout: nobody removed the member (the removal
	// failed, or the death was not seen), so the group waited for its
	// session to time out.
	DetectedBySessionTimeout = "session-timeout"
	// DetectedByLeave: the instance stopped gracefully and left the group
	// itself.
	DetectedByLeave = "leave"
)

// errDetectorClosed is what a removal attempted after Run returned fails
// with.
var errDetectorClosed = errors.New("the supervisor's client is closed")

// detector is the Supervisor's client for removing dead instances, created
// by Run and closed before Run returns.
type detector struct {
	cfg     Config
	log     *slog.Logger
	cl      *kgo.Client
	timeout time.Duration

	// mu guards closed; wg counts the removals under way, which close
	// waits for before it closes the client.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newDetector(cfg Config) (*detector, error) {
	// The App's extra options first, for TLS and SASL; the client only
	// sends requests of its own, so nothing else in them matters.
	opts := append([]kgo.Opt{}, cfg.ClientOptions...)
	opts = append(opts, kgo.SeedBrokers(cfg.Brokers...))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the supervisor's client: %w", err)
	}
	return &detector{cfg: cfg, log: cfg.Logger.With("app", cfg.ApplicationID), cl: cl, timeout: cfg.SessionTimeout}, nil
}

// close waits for the removals under way and closes the client.
func (d *detector) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
	d.cl.Close()
}

// removeDead fences the transactional id of app, which died, and removes
// its member from the group (see the steps above). It returns nil when
// the member was removed, and does nothing for an App that never joined.
func (d *detector) removeDead(app *App) error {
	memberID, instanceID := app.groupIdentity()
	if memberID == "" && instanceID == nil {
		return errMemberGone
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errDetectorClosed
	}
	d.wg.Add(1)
	d.mu.Unlock()
	defer d.wg.Done()

	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	start := time.Now()
	if app.cfg.ProcessingGuarantee == ExactlyOnce {
		// A fence that fails is only slower readers: the removal is
		// still worth sending.
		if err := d.fence(ctx, app.transactionalID(), app.cfg.TransactionTimeout); err != nil {
			d.log.Warn("fencing a dead instance failed; its open transaction stays until the transaction timeout",
				"instance", app.cfg.InstanceID, "err", err)
		} else {
			d.log.Info("fenced a dead instance's transactional id", "instance", app.cfg.InstanceID,
				"transactional_id", app.transactionalID(), "took", time.Since(start))
		}
	}
	err := d.leave(ctx, memberID, instanceID)
	if err == nil {
		d.log.Info("removed a dead instance from the group", "instance", app.cfg.InstanceID,
			"member", memberID, "generation", app.lastGeneration(), "took", time.Since(start))
	}
	return err
}

// fence initializes a producer id for txnID. The broker bumps the id's
// epoch, which fences the dead producer, and aborts its open transaction
// first. A broker that aborts asynchronously answers
// CONCURRENT_TRANSACTIONS until it is done; that and the coordinator's
// other retriable answers are retried until ctx ends.
func (d *detector) fence(ctx context.Context, txnID string, timeout time.Duration) error {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &txnID
	req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
	err := retryRetriable(ctx, func() error {
		resp, err := req.RequestWith(ctx, d.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	if err != nil {
		return fmt.Errorf("fencing transactional id %q: %w", txnID, err)
	}
	return nil
}

// leave removes a member from the application's group, retrying what
// the coordinator answers as retriable.
func (d *detector) leave(ctx context.Context, memberID string, instanceID *string) error {
	group := d.cfg.ApplicationID
	err := retryRetriable(ctx, func() error {
		return removeMember(ctx, d.cl, group, memberID, instanceID, "the supervisor saw the instance die")
	})
	if err != nil {
		return fmt.Errorf("removing member %q from group %q: %w", memberID, group, err)
	}
	return nil
}

// retryRetriable calls try until it returns nil or an error that is not
// retriable (retriableAnswer), or ctx ends, backing off from 10 ms to
// 250 ms.
func retryRetriable(ctx context.Context, try func() error) error {
	backoff := 10 * time.Millisecond
	for {
		err := try()
		if err == nil || !retriableAnswer(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last answer: %w)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// retriableAnswer reports whether a coordinator's answer err is worth
// asking again: what kerr marks retriable, and CONCURRENT_TRANSACTIONS,
// which kerr does not. The transaction coordinator answers that while the
// transaction is between states (a dead producer's commit or abort under
// way, its markers being written), and it passes; Kafka's own clients
// retry it too. Taken as final, it left a dead instance unfenced and its
// open transaction holding read-committed readers up to the transaction
// timeout (seen on Apache Kafka).
func retriableAnswer(err error) bool {
	return kerr.IsRetriable(err) || errors.Is(err, kerr.ConcurrentTransactions)
}

// noteMember records the group member id and generation cl has, when it
// has one, so that a Supervisor can remove this instance's member after
// it died and its client is gone (groupIdentity).
func (a *App) noteMember(cl *kgo.Client) {
	id, gen := cl.GroupMetadata()
	if id == "" {
		return
	}
	a.memberMu.Lock()
	defer a.memberMu.Unlock()
	a.memberID, a.generation = id, gen
}

// groupIdentity returns what identifies this instance's last member of
// the group: the member id it last joined with ("" when it never joined),
// and its group instance id under static membership, nil otherwise.
func (a *App) groupIdentity() (memberID string, instanceID *string) {
	a.memberMu.Lock()
	defer a.memberMu.Unlock()
	if a.cfg.StaticMembership {
		// A static member is known by its instance id too; a removal
		// naming only the member id would be refused once a restart
		// with the same instance id replaced it.
		id := a.cfg.InstanceID
		return a.memberID, &id
	}
	return a.memberID, nil
}

// lastGeneration is the group generation this instance last joined, -1
// when it never joined.
func (a *App) lastGeneration() int32 {
	a.memberMu.Lock()
	defer a.memberMu.Unlock()
	if a.memberID == "" {
		return -1
	}
	return a.generation
}

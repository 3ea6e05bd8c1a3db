package streams

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// New replicas start after the tasks that moved here have resumed.
//
// A rebalance that follows a failure gives some instances the failed
// instance's tasks, promoted from their standbys, and gives others new
// standbys of those tasks, which must fill from the start of their
// changelogs. Started at once, the new standbys' fetches and pebble
// writes compete with the promoted tasks for the broker, the disk and the
// CPU, just when those tasks are catching up on what they missed. So the
// assignment callback only queues new replicas; the follower starts them
// once every task that arrived has processed its first record (goAhead),
// or after replicaStartDelay at the latest. Availability first,
// redundancy a moment later.

// replicaStartDelay bounds how long new replicas wait for goAhead.
const replicaStartDelay = time.Second

// queue hands the replicas of a new assignment to the follower.
func (s *standbys) queue(replicas []*standbyTask) {
	if len(replicas) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, replicas...)
	s.startAt = time.Now().Add(replicaStartDelay)
	s.waiting.Store(true)
	s.wakeLocked()
}

// goAhead starts the queued replicas now. The processing goroutine calls
// it after a batch, while replicas wait, once no task that arrived is
// still recovering.
func (s *standbys) goAhead() {
	if !s.waiting.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting.Store(false)
	s.startAt = time.Now()
	s.wakeLocked()
}

// wakeLocked cuts the follower's poll short so that it looks at the
// queue again. The caller holds mu.
func (s *standbys) wakeLocked() {
	if s.wakePoll != nil {
		s.wakePoll()
	}
}

// idlePollBound bounds how long the follower's poll waits for changelog
// records: an idle follower still comes round to flush its stores' old
// memtables (see standbys.apply).
const idlePollBound = time.Minute

// pollContext is the context of the follower's next poll: it ends when
// queued replicas are due, after idlePollBound, or when wakeLocked is
// called.
func (s *standbys) pollContext(ctx context.Context) (context.Context, context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := time.Now().Add(idlePollBound)
	if len(s.pending) > 0 && s.startAt.Before(deadline) {
		deadline = s.startAt
	}
	pollCtx, cancel := context.WithDeadline(ctx, deadline)
	s.wakePoll = cancel
	return pollCtx, cancel
}

// startDue opens and starts the queued replicas once they are due. It
// holds mu throughout, so that a release never finds a replica half
// started. A replica that cannot start is reported and dropped: the next
// rebalance places it again.
func (s *standbys) startDue(ctx context.Context) {
	a := s.app
	s.mu.Lock()
	if len(s.pending) == 0 || time.Now().Before(s.startAt) {
		s.mu.Unlock()
		return
	}
	due := s.pending
	s.pending = nil
	s.waiting.Store(false)
	var opened []*standbyTask
	for _, sb := range due {
		if sb.stores == nil {
			stores, err := a.openTaskStores(a.topo.subtopologies[sb.id.Subtopology], sb.id)
			if err != nil {
				s.failedLocked(sb, fmt.Errorf("opening replica of task %s: %w", sb.id, err))
				continue
			}
			sb.stores = stores
		}
		opened = append(opened, sb)
	}
	// The follower's own client: the group client may be closed and
	// replaced meanwhile (recover.go).
	adm := kadm.NewClient(s.client)
	ends, err := a.changelogEnds(ctx, adm, nil, opened)
	if err != nil {
		// Try again later, unless the App is going away.
		s.pending = append(opened, s.pending...)
		s.startAt = time.Now().Add(replicaStartDelay)
		s.mu.Unlock()
		if ctx.Err() == nil {
			a.log.Warn("starting replicas failed; retrying", "err", err)
		}
		return
	}
	opened = s.loadSnapshotsLocked(ctx, opened, ends)
	// Listed after the snapshots' downloads, the nearer the fetches.
	starts := a.changelogStarts(ctx, adm, opened)
	var events []StandbyEvent
	for _, sb := range opened {
		evs, err := s.addLocked(sb, ends, starts)
		if err != nil {
			s.failedLocked(sb, err)
			continue
		}
		events = append(events, evs...)
	}
	s.mu.Unlock()
	for _, ev := range events {
		for _, h := range a.hooks.standby {
			h.OnStandbyStarted(ev)
		}
	}
}

// failedLocked reports a replica that could not start and closes what it
// opened.
func (s *standbys) failedLocked(sb *standbyTask, err error) {
	s.app.log.Error("replica not started", "task", sb.id.String(), "err", err)
	s.app.reportError(sb.id, err, false)
	closeTaskStores(sb.stores)
}

// changelogStarts lists the log start offsets of the replicas'
// changelogs, so that a store whose checkpoint is before its log start
// is emptied and follows from there (passLogStart). Without them (the
// listing failed) a replica starts from its checkpoint all the same: the
// follower's fetches carry the log start too, and the store is emptied
// at the first one.
func (a *App) changelogStarts(ctx context.Context, adm *kadm.Client, replicas []*standbyTask) kadm.ListedOffsets {
	var topics []string
	for _, sb := range replicas {
		for _, st := range sb.stores {
			if st.changelog != "" && !slices.Contains(topics, st.changelog) {
				topics = append(topics, st.changelog)
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, a.brokerTimeout())
	defer cancel()
	starts, err := adm.ListStartOffsets(lctx, topics...)
	if err != nil && ctx.Err() == nil {
		a.log.Warn("listing the log starts of replicas' changelogs failed; their fetches will tell", "err", err)
	}
	return starts
}

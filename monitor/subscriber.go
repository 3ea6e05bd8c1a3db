package monitor

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// errClosed is what Next returns once the Subscriber is closed.
var errClosed = fmt.Errorf("monitor: subscriber closed: %w", net.ErrClosed)

// Subscriber receives a Monitor's snapshots and events. Its memory is
// bounded: one pending snapshot and SubscriberEvents events.
type Subscriber struct {
	m      *Monitor
	notify chan struct{} // a token when something arrived
	done   chan struct{} // closed by Close
	once   sync.Once

	// mu guards the fields below. The Monitor holds its own mu while it
	// takes this one; never the other way round.
	mu     sync.Mutex
	closed bool
	queue  ring
	// missed counts the events dropped from a full queue since the last
	// snapshot read.
	missed int64
	// snap is the pending snapshot, the newest published, nil when none
	// is; the queued events with Seq <= snapSeq happened before it.
	snap    *Snapshot
	snapSeq uint64
	// first says snap is the first message, not read yet.
	first bool
}

// Subscribe returns a Subscriber. Close it when done.
func (m *Monitor) Subscribe() *Subscriber {
	s := &Subscriber{m: m, notify: make(chan struct{}, 1), done: make(chan struct{}), queue: newRing(m.opts.SubscriberEvents), first: true}
	m.mu.Lock()
	s.snap, s.snapSeq = m.snapshotLocked(time.Now()), m.seq
	m.subs[s] = struct{}{}
	m.mu.Unlock()
	return s
}

// Next blocks until the next message or the end of ctx. The first message
// is always a full snapshot. Then come the events as they happen and the
// newest snapshot at most every PublishInterval, in the order they
// happened. When events were dropped because the queue was full, the next
// message is a snapshot whose MissedEvents says how many.
//
// The snapshot and event a message points to are shared with other
// subscribers: do not modify them. After Close, Next returns an error
// that wraps net.ErrClosed.
func (s *Subscriber) Next(ctx context.Context) (Message, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return Message{}, errClosed
		}
		if s.first || s.missed > 0 {
			snap, missed := s.snap, s.missed
			s.snap, s.first, s.missed = nil, false, 0
			s.mu.Unlock()
			if missed > 0 {
				if l := s.m.latest.Load(); l != nil && (snap == nil || l.Time >= snap.Time) {
					snap = l
				}
			}
			if snap == nil {
				fresh := s.m.Snapshot()
				snap = &fresh
			}
			if missed > 0 {
				c := *snap
				c.MissedEvents = missed
				snap = &c
			}
			return Message{Type: "snapshot", Snapshot: snap}, nil
		}
		if s.queue.size > 0 && (s.snap == nil || s.queue.peek().ev.Seq <= s.snapSeq) {
			e := s.queue.pop()
			s.mu.Unlock()
			ev := e.render()
			return Message{Type: "event", Event: &ev}, nil
		}
		if snap := s.snap; snap != nil {
			s.snap = nil
			s.mu.Unlock()
			return Message{Type: "snapshot", Snapshot: snap}, nil
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-s.done:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// Close stops the subscription and releases its queue; a Next waiting
// returns.
func (s *Subscriber) Close() {
	s.m.mu.Lock()
	delete(s.m.subs, s)
	s.m.mu.Unlock()
	s.mu.Lock()
	s.closed, s.queue, s.snap = true, ring{}, nil
	s.mu.Unlock()
	s.once.Do(func() { close(s.done) })
}

// push queues an event, dropping the oldest when the queue is full. The
// caller holds the Monitor's mu.
func (s *Subscriber) push(e *entry) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if s.queue.push(*e) {
		s.missed++
	}
	s.mu.Unlock()
	s.wake()
}

// offer makes snap the pending snapshot, replacing any older one. The
// caller holds the Monitor's mu; seq is the last event's.
func (s *Subscriber) offer(snap *Snapshot, seq uint64) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.snap, s.snapSeq = snap, seq
	s.mu.Unlock()
	s.wake()
}

func (s *Subscriber) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// pending reports how many events and snapshots wait to be read.
func (s *Subscriber) pending() (events int, snapshots int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap != nil {
		snapshots = 1
	}
	return s.queue.size, snapshots
}

// Run samples every deployment's Source and publishes a snapshot to the
// subscribers every PublishInterval, until ctx ends; then it returns nil.
// With Options.History, Run also writes the events since the last
// publish and, once a SnapshotEvery, each deployment's snapshot to it.
func (m *Monitor) Run(ctx context.Context) error {
	tick := time.NewTicker(m.opts.PublishInterval)
	defer tick.Stop()
	for {
		m.persist(m.publish())
		select {
		case <-ctx.Done():
			m.persist(nil, 0)
			return nil
		case <-tick.C:
		}
	}
}

// publish samples the deployments, outside the lock, and publishes the
// resulting snapshot, which it returns with the last event's Seq.
func (m *Monitor) publish() (*Snapshot, uint64) {
	type job struct {
		d        *deployment
		src      Source
		windowed []string
		// failed are the partitions whose lag is read from the broker.
		failed []streams.TopicPartition
	}
	m.mu.Lock()
	jobs := make([]job, 0, len(m.deps))
	for _, d := range m.deps {
		if d.src != nil {
			jobs = append(jobs, job{d, d.src, d.windowed, d.failedPartitions(time.Now())})
		}
	}
	m.mu.Unlock()
	samples := make([]sample, len(jobs))
	for i, j := range jobs {
		samples[i] = take(j.d, j.src, j.windowed)
		samples[i].brokerLag = readBrokerLag(j.src, j.d.info, j.failed)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range samples {
		if !s.d.removed {
			s.d.apply(now, s)
		}
	}
	snap := m.snapshotLocked(now)
	m.latest.Store(snap)
	for s := range m.subs {
		s.offer(snap, m.seq)
	}
	return snap, m.seq
}

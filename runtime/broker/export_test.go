package broker

import "time"

// SetNow sets the clock the retention pass reads.
func SetNow(b *Broker, now func() time.Time) { b.now = now }

// SetCompactionHooks sets what a retention pass calls after it found no
// open transaction and before it compacts, and what the broker calls when
// it holds a transactional produce request meanwhile.
func SetCompactionHooks(b *Broker, beforeCompact, onHold func()) {
	b.beforeCompact = beforeCompact
	b.hold.mu.Lock()
	b.hold.onHold = onHold
	b.hold.mu.Unlock()
}

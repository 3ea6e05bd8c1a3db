package broker

import "time"

// SetNow sets the clock the retention pass reads.
func SetNow(b *Broker, now func() time.Time) { b.now = now }

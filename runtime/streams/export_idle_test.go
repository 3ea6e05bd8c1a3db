package streams

import "time"

// SetLagStaleAfter replaces, for a's tasks, how long a partition may seem to
// lag while it yields nothing before it is listed again: a test sets it
// long to see that transaction markers alone never make a task wait.
func SetLagStaleAfter(a *App, d time.Duration) { a.lagStale = d }

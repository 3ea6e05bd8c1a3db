package streams

// Crash points of an exactly-once commit, for tests.
const (
	CrashBeforeCommit = crashBeforeCommit
	CrashAfterCommit  = crashAfterCommit
	CrashDuringApply  = crashDuringApply
)

// SetCrashAt makes the App crash at the first crash point for which
// crashAt returns true. Call it before Run.
func SetCrashAt(a *App, crashAt func(point string) bool) { a.crashAt = crashAt }

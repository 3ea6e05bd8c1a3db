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

// StoreBlockCaches returns, per active task of a that has store, the size
// of the block cache its pebble database was opened with.
func StoreBlockCaches(a *App, store string) map[TaskID]int64 {
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	out := make(map[TaskID]int64)
	for id, t := range a.tasks {
		if st, ok := t.stores[store]; ok {
			out[id] = st.db.BlockCacheBytes()
		}
	}
	return out
}

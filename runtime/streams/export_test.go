package streams

import "maps"

// Crash points of an exactly-once commit, for tests.
const (
	CrashBeforeCommit = crashBeforeCommit
	CrashAfterCommit  = crashAfterCommit
	CrashDuringApply  = crashDuringApply
)

// SetCrashAt makes the App crash at the first crash point for which
// crashAt returns true. Call it before Run.
func SetCrashAt(a *App, crashAt func(point string) bool) { a.crashAt = crashAt }

// CrashUnseen crashes instance id of s as Crash does, but as a crash
// nobody saw: the Supervisor does not remove the dead member, and the
// group notices it at the session timeout.
func CrashUnseen(s *Supervisor, id string) error { return s.crash(id, false, nil) }

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

// Suspensions returns, per task, how many rebalances set it aside on a.
func Suspensions(a *App) map[TaskID]int {
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	return maps.Clone(a.suspensions)
}

// SupervisedSuspensions returns Suspensions of the App that instance id of
// s runs now, nil when it runs none.
func SupervisedSuspensions(s *Supervisor, id string) map[TaskID]int {
	s.mu.Lock()
	var app *App
	for _, in := range s.instances {
		if in.id == id {
			app = in.app
		}
	}
	s.mu.Unlock()
	if app == nil {
		return nil
	}
	return Suspensions(app)
}

// GroupGeneration returns the group generation a's client was last
// assigned in, -1 when it has no client.
func GroupGeneration(a *App) int32 {
	cl := a.kc()
	if cl == nil {
		return -1
	}
	_, gen := cl.GroupMetadata()
	return gen
}

// HoldStoreOpens makes every store of a's tasks wait for release to close
// before it opens. Call it before Run.
func HoldStoreOpens(a *App, release <-chan struct{}) { a.beforeStoreOpen = func() { <-release } }

// PauseStandbyFetches stops a's standby follower fetching the changelogs
// of its replicas, as a follower the retention outruns: what it fetched
// and has not applied yet is dropped, and fetched again once
// ResumeStandbyFetches is called.
func PauseStandbyFetches(a *App) {
	s := a.standby
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := make(map[string][]int32)
	for tp := range s.byTP {
		parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
	}
	s.client.PauseFetchPartitions(parts)
}

// ResumeStandbyFetches undoes PauseStandbyFetches.
func ResumeStandbyFetches(a *App) {
	s := a.standby
	s.client.ResumeFetchPartitions(s.client.PauseFetchPartitions(nil))
}

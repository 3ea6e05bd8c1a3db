package streams

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
)

// State cleanup, as Kafka Streams' state.cleanup.delay.ms: the directory
// of a task this instance neither runs nor keeps a replica of is deleted
// once it has not been owned here for Config.StateCleanupDelay. The delay
// is what lets a task that comes back (a rolling restart, a rebalance
// that undoes itself) find its state and restore only the tail of its
// changelogs; past it the state is taken to have moved for good, and
// keeping it only fills the disk.
//
// The check runs on the processing goroutine between polls, every half
// delay, holding tasksMu: the group callbacks, which take tasks up and
// place replicas, cannot run meanwhile, so the set of owned tasks it
// reads stays true while it deletes. Kafka Streams judges by a
// directory's modification time; Braid keeps, in memory, when each task
// was last owned here, and counts a directory it finds at start as owned
// at start: a restarted instance gives the state it finds a full delay to
// be assigned back before it goes, whatever the time on the disk says.

// StateCleanupDisabled, as Config.StateCleanupDelay, keeps the state of
// tasks that moved away for good.
const StateCleanupDisabled time.Duration = -1

// minCleanupCheck bounds how often the check runs with a tiny delay.
const minCleanupCheck = 10 * time.Millisecond

// cleaner is the state of the cleanup; the processing goroutine and the
// group callbacks use it under App.tasksMu.
type cleaner struct {
	// lastOwned is when each task was last owned here, for the tasks
	// whose directory may be on disk.
	lastOwned map[TaskID]time.Time
	// next is when the check runs next; zero with cleanup disabled.
	next time.Time
}

// cleanupInterval is how often the check runs.
func (a *App) cleanupInterval() time.Duration {
	return max(a.cfg.StateCleanupDelay/2, minCleanupCheck)
}

// startCleanup readies the cleanup when the App starts: every task
// directory found counts as owned now.
func (a *App) startCleanup(now time.Time) {
	if a.cfg.StateCleanupDelay <= 0 {
		return
	}
	a.tidy.lastOwned = make(map[TaskID]time.Time)
	entries, _ := os.ReadDir(filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID))
	for _, e := range entries {
		if id, ok := parseTaskDir(e.Name()); ok && e.IsDir() {
			a.tidy.lastOwned[id] = now
		}
	}
	a.tidy.next = now.Add(a.cleanupInterval())
}

// released notes that a task stopped being owned here. The caller holds
// tasksMu.
func (a *App) released(id TaskID, now time.Time) {
	if a.tidy.lastOwned != nil {
		a.tidy.lastOwned[id] = now
	}
}

// cleanupWake is when the processing goroutine must stop polling for the
// next check; zero when there is none.
func (a *App) cleanupWake() time.Time { return a.tidy.next }

// maybeCleanStateDirs runs the check when it is due.
func (a *App) maybeCleanStateDirs(now time.Time) {
	if a.tidy.next.IsZero() || now.Before(a.tidy.next) {
		return
	}
	a.tidy.next = now.Add(a.cleanupInterval())
	a.cleanStateDirs(now)
}

// cleanStateDirs deletes the directories of the tasks not owned here for
// longer than the delay. It never fails the App: a directory it cannot
// delete now is logged and tried again at the next check.
func (a *App) cleanStateDirs(now time.Time) {
	root := filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID)
	entries, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			a.log.Warn("state cleanup: cannot read the state dir", "dir", root, "err", err)
		}
		return
	}
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	owned := a.ownedTasks()
	for id := range owned {
		a.tidy.lastOwned[id] = now
	}
	var cleaned []string
	for _, e := range entries {
		id, ok := parseTaskDir(e.Name())
		if !e.IsDir() || !ok || owned[id] {
			continue
		}
		last, seen := a.tidy.lastOwned[id]
		if !seen {
			// A directory made since the last check by something else
			// than this instance's tasks (copied in by hand, say): its
			// delay starts now.
			a.tidy.lastOwned[id] = now
			continue
		}
		if idle := now.Sub(last); idle > a.cfg.StateCleanupDelay {
			dir := filepath.Join(root, e.Name())
			if a.removeTaskDir(id, dir, idle) {
				delete(a.tidy.lastOwned, id)
				delete(a.onDisk, id)
				cleaned = append(cleaned, id.String())
			}
		}
	}
	if len(cleaned) > 0 {
		a.publishHeld() // the assignor no longer hears of them
		a.mu.Lock()
		a.stateDirsCleaned += int64(len(cleaned))
		a.mu.Unlock()
	}
}

// ownedTasks is the set of tasks this instance runs, has suspended for a
// rebalance, or keeps a replica of (started or queued). The caller holds
// tasksMu.
func (a *App) ownedTasks() map[TaskID]bool {
	owned := make(map[TaskID]bool, len(a.tasks)+len(a.suspended))
	for _, id := range slices.Concat(slices.Collect(maps.Keys(a.tasks)), slices.Collect(maps.Keys(a.suspended)), a.standby.ids()) {
		owned[id] = true
	}
	return owned
}

// removeTaskDir deletes one task directory, every store through
// state.Destroy, which refuses a store that is open (its lock held, by
// this process or another). It reports whether the directory is gone.
func (a *App) removeTaskDir(id TaskID, dir string, idle time.Duration) bool {
	log := a.log.With("task", id.String(), "dir", dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Warn("state cleanup: cannot read the task's state dir", "err", err)
		return false
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			err = os.Remove(path)
		} else {
			err = state.Destroy(path)
		}
		if errors.Is(err, state.ErrLocked) {
			log.Info("state cleanup: skipping a task whose store is open elsewhere", "store", e.Name(), "err", err)
			return false
		}
		if err != nil {
			log.Warn("state cleanup: cannot delete the task's state", "err", fmt.Errorf("deleting %s: %w", path, err))
			return false
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("state cleanup: cannot delete the task's state dir", "err", err)
		return false
	}
	log.Info("state cleanup: deleted the state of a task that moved away", "unowned", idle.Round(time.Millisecond), "delay", a.cfg.StateCleanupDelay)
	return true
}

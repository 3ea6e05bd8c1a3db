package streams

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Static membership (Config.StaticMembership, KIP-345). This file owns
// what a static member keeps across restarts, the join file, and how it
// leaves for good (CloseAndLeave); the group client joins with
// kgo.InstanceID (group.go).
//
// A static member that restarts within its session timeout rejoins under
// the same group.instance.id, and the broker gives it its old assignment
// without a rebalance. Kafka's broker asks only that the join select the
// same protocol; kfake, the embedded broker, also asks that the join's
// metadata be the previous join's, byte for byte, and Braid's metadata
// carries changelog offsets that move with every commit. So the member
// keeps, in its state dir next to its tasks' state, the metadata of the
// join that produced its last assignment and that assignment's
// generation, and its first join after a restart sends the same bytes
// again when they are still true (see assign's replay.go for what "true"
// means, and why offsets that lag are the safe error). When the broker
// skipped the rebalance, the assignment that follows is of the same
// generation; when it is of a newer one, a leader planned with the old
// metadata, which may name partitions this member no longer owns, so the
// member joins again at once with fresh metadata.
//
// Either way the tasks that come back open their stores from the state
// dir, as after any rebalance (rebalance.go), and restore only the tail
// of their changelogs past their checkpoints.

// staticJoin is the content of the join file.
type staticJoin struct {
	Generation int32  `json:"generation"`
	Metadata   []byte `json:"metadata"`
}

// staticState is what the App knows of its replayed join.
type staticState struct {
	// mu guards the fields below: start sets them, the assignment
	// callback reads and clears them.
	mu sync.Mutex
	// replaying is set from start until the first assignment when the
	// balancer was given a join to replay; replayGen is its generation.
	replaying bool
	replayGen int32
}

// staticJoinPath is where the join file lives: in <StateDir>/<ApplicationID>,
// named by the instance, because a stateless topology takes no lock on
// that directory, and instances may share it.
func (a *App) staticJoinPath() string {
	return filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, "static-"+url.PathEscape(a.cfg.InstanceID)+".join")
}

// loadStaticJoin gives the balancer the join to replay, if a previous run
// of this instance left one. A missing or unreadable file only costs a
// rebalance.
func (a *App) loadStaticJoin() {
	if !a.cfg.StaticMembership {
		return
	}
	data, err := os.ReadFile(a.staticJoinPath())
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var j staticJoin
	if err == nil {
		err = json.Unmarshal(data, &j)
	}
	if err != nil || len(j.Metadata) == 0 {
		a.log.Warn("static membership: cannot read the last join; joining with fresh metadata, which rebalances", "file", a.staticJoinPath(), "err", err)
		return
	}
	a.balancer.SetReplay(j.Metadata)
	a.static.mu.Lock()
	a.static.replaying, a.static.replayGen = true, j.Generation
	a.static.mu.Unlock()
}

// staticAssigned runs when an assignment arrives: it keeps the join that
// produced it, and reports whether the member must join again because a
// rebalance planned with its replayed join.
func (a *App) staticAssigned(cl *kgo.Client) (rejoin bool) {
	if !a.cfg.StaticMembership {
		return false
	}
	meta, replayed := a.balancer.LastJoin()
	_, gen := cl.GroupMetadata()
	a.static.mu.Lock()
	check, want := a.static.replaying, a.static.replayGen
	a.static.replaying = false
	a.static.mu.Unlock()
	if check && replayed && gen != want {
		a.log.Info("static membership: a rebalance planned with the join replayed from before the restart; joining again with fresh metadata",
			"generation", gen, "replayed_generation", want)
		return true
	}
	if err := a.saveStaticJoin(staticJoin{Generation: gen, Metadata: meta}); err != nil {
		a.log.Warn("static membership: cannot keep the last join; a restart will rebalance", "err", err)
	}
	return false
}

// saveStaticJoin writes the join file whole or not at all: a rename
// replaces the old one.
func (a *App) saveStaticJoin(j staticJoin) error {
	path := a.staticJoinPath()
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// CloseAndLeave is Close for an instance that goes for good. Close keeps
// a static member in the group, so that its restart within the session
// timeout moves nothing, and the group moves its tasks only once the
// session times out; CloseAndLeave then also removes the member from the
// group by its InstanceID, so that the group moves its tasks at once, and
// forgets the join a restart would replay. For a dynamic member, which
// leaves on Close, it is Close. Leaving needs Kafka 2.4 or later
// (LeaveGroup v3).
func (a *App) CloseAndLeave() error {
	a.mu.Lock()
	ran := a.cancel != nil
	a.mu.Unlock()
	err := a.Close()
	if !a.cfg.StaticMembership || !ran {
		return err
	}
	if rmErr := os.Remove(a.staticJoinPath()); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		a.log.Warn("static membership: cannot remove the last join", "err", rmErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.brokerTimeout())
	defer cancel()
	return errors.Join(err, leaveGroupAsInstance(ctx, a.cfg, a.cfg.InstanceID))
}

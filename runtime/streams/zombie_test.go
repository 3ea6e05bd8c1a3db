package streams_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/braidstream/braid/runtime/streams"
)

// TestSameInstanceIDAtLeastOnceRunsSideBySide starts two at-least-once
// Apps with one InstanceID, as two processes started with the same id
// would. Without Config.StaticMembership (the default) the group gives
// them two member ids, and an at-least-once producer is idempotent only,
// so nothing fences either: the group splits the tasks between them, and
// every record is processed. What
// they must not share is a state dir: a third App with the same id and
// the first's StateDir stops at once with a *StateDirInUseError naming the
// directory, before it opens (or deletes) a store of the first's.
func TestSameInstanceIDAtLeastOnceRunsSideBySide(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 4)
	createTopic(t, b, "click-counts", 4)
	const app = "zombie"
	dirA := t.TempDir()
	newApp := func(dir string) *streams.App {
		cfg := testConfig(b, app)
		cfg.InstanceID = "twin"
		cfg.StateDir = dir
		a, err := streams.New(countTopology(t, true), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	first, second := newApp(dirA), newApp(t.TempDir())
	runApp(t, first)
	runApp(t, second)
	waitFor(t, 60*time.Second, "both twins running tasks", func() bool {
		s1, s2 := first.Stats(), second.Stats()
		return s1.State == streams.Running && s2.State == streams.Running &&
			len(s1.Tasks) > 0 && len(s2.Tasks) > 0 && len(s1.Tasks)+len(s2.Tasks) == 4
	})
	produceClicks(t, b, 0, 80, 8)
	waitFor(t, 60*time.Second, "every click committed", func() bool { return allCommitted(t, b, app, "clicks") })

	third := newApp(dirA)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := third.Run(ctx)
	var inUse *streams.StateDirInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("Run with the first twin's StateDir: %v, want a *StateDirInUseError", err)
	}
	t.Logf("Run: %v", err)
	if want := filepath.Join(dirA, app); inUse.Dir != want || !strings.Contains(err.Error(), want) {
		t.Errorf("error names dir %q (%q), want %q", inUse.Dir, err, want)
	}
	if !errors.Is(err, state.ErrLocked) || !strings.Contains(err.Error(), "give each instance its own Config.StateDir") {
		t.Errorf("error %q does not say the dir is locked and what to do", err)
	}
	if st := first.Stats(); st.State != streams.Running || len(st.Tasks) == 0 {
		t.Errorf("first twin %v with %d tasks after the third was refused, want it running on", st.State, len(st.Tasks))
	}
}

package streams

import (
	"strings"
	"testing"

	"github.com/braidstream/braid/runtime/internal/snapshot"
	"github.com/braidstream/braid/runtime/internal/state"
)

// TestUnfitSnapshots lists every reason a snapshot cannot start a store,
// each on a manifest that is right but for it.
func TestUnfitSnapshots(t *testing.T) {
	db, err := state.Open(state.Options{Dir: t.TempDir(), Identity: "app/0_1/counts", KeyLayout: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := &taskStore{db: db, changelog: "app-counts-changelog", partition: 1}
	w := snapshotWant{task: TaskID{0, 1}, st: st, logStart: 100, end: 1000}
	good := snapshot.Manifest{Identity: "app/0_1/counts", KeyLayout: "v2", FormatVersion: state.FormatVersion(),
		Changelog: "app-counts-changelog", Partition: 1, ChangelogOffset: 500}
	if reason := unfit(w, good); reason != "" {
		t.Fatalf("a snapshot that fits was refused: %s", reason)
	}
	for _, tt := range []struct {
		name string
		mod  func(*snapshot.Manifest)
		want string
	}{
		{"another changelog", func(m *snapshot.Manifest) { m.Changelog = "other-changelog" }, "of changelog other-changelog/1"},
		{"another partition", func(m *snapshot.Manifest) { m.Partition = 2 }, "of changelog app-counts-changelog/2"},
		{"another store", func(m *snapshot.Manifest) { m.Identity = "app/0_1/other" }, `of store "app/0_1/other"`},
		{"another key layout", func(m *snapshot.Manifest) { m.KeyLayout = "" }, `keys laid out as ""`},
		{"another format", func(m *snapshot.Manifest) { m.FormatVersion++ }, "store format"},
		{"past the end", func(m *snapshot.Manifest) { m.ChangelogOffset = 1001 }, "past its end 1000"},
		{"before the log start", func(m *snapshot.Manifest) { m.ChangelogOffset = 99 }, "before its log start 100"},
		{"empty", func(m *snapshot.Manifest) { m.ChangelogOffset = 0 }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := good
			tt.mod(&m)
			reason := unfit(w, m)
			if reason == "" || !strings.Contains(reason, tt.want) {
				t.Errorf("unfit = %q, want a reason containing %q", reason, tt.want)
			}
		})
	}
}

package streams

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
)

// TestOpenTaskStoresClosesTheOthersOnFailure opens the stores of a task
// with a left join and a count (four stores, more than maxStoreOpens
// with the extra one) while other owners hold some of them open: the
// open fails naming each store it could not open, and closes every
// store it did open, so that they can be opened again. Then, with the
// locks released, it opens them all, in topology order.
func TestOpenTaskStoresClosesTheOthersOnFailure(t *testing.T) {
	b := NewBuilder()
	left := b.Stream([]string{"l"}, WithSerdes(String, String))
	right := b.Stream([]string{"r"}, WithSerdes(String, String))
	joined := left.LeftJoin(right, func(_, l, r any) (any, error) { return l, nil }, JoinTimeDifference(time.Second, 0),
		Materialized(StoreOptions{Name: "j"}))
	joined.GroupByKey().Count(Materialized(StoreOptions{Name: "counts"}))
	joined.GroupByKey().Count(Materialized(StoreOptions{Name: "counts2"}))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(topo.subtopologies); n != 1 {
		t.Fatalf("%d sub-topologies, want 1", n)
	}
	st := topo.subtopologies[0]
	var names []string
	for _, n := range st.nodes {
		for _, spec := range n.storeSpecs {
			names = append(names, spec.name)
		}
	}
	if len(names) <= maxStoreOpens {
		t.Fatalf("stores %v: want more than %d", names, maxStoreOpens)
	}
	cfg := Config{ApplicationID: "open-stores", Brokers: []string{"unused:9092"}, StateDir: t.TempDir()}.WithDefaults()
	a := &App{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), hooks: newHookSet(cfg.Hooks)}
	id := TaskID{0, 0}
	dir := func(store string) string {
		return filepath.Join(cfg.StateDir, cfg.ApplicationID, id.String(), store)
	}

	held := map[string]bool{names[1]: true, names[len(names)-1]: true}
	var holders []io.Closer
	for name := range held {
		db, err := state.Open(state.Options{Dir: dir(name), Identity: cfg.ApplicationID + "/" + id.String() + "/" + name})
		if err != nil {
			t.Fatal(err)
		}
		holders = append(holders, db)
	}
	stores, err := a.openTaskStores(st, id)
	if err == nil {
		closeTaskStores(stores)
		t.Fatal("the stores opened while two of them were held")
	}
	if !errors.Is(err, state.ErrLocked) {
		t.Fatalf("error %v, want one wrapping state.ErrLocked", err)
	}
	for _, name := range names {
		if mentioned := strings.Contains(err.Error(), `"`+name+`"`); mentioned != held[name] {
			t.Errorf("error names store %q: %v, want %v: %v", name, mentioned, held[name], err)
		}
		if held[name] {
			continue
		}
		// Destroy fails on a store still open.
		if err := state.Destroy(dir(name)); err != nil {
			t.Errorf("store %q was left open: %v", name, err)
		}
	}
	for _, h := range holders {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}

	stores, err = a.openTaskStores(st, id)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTaskStores(stores)
	var got []string
	for _, s := range stores {
		got = append(got, s.spec.name)
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("stores opened as %v, want %v", got, names)
	}
}

// TestOpenTasksStoresFailsOnlyTheTaskThatFailed opens the stores of two
// tasks side by side while one store of the second is held: the first
// task gets all its stores, the second its failure, with the stores it
// did open closed.
func TestOpenTasksStoresFailsOnlyTheTaskThatFailed(t *testing.T) {
	b := NewBuilder()
	left := b.Stream([]string{"l"}, WithSerdes(String, String))
	right := b.Stream([]string{"r"}, WithSerdes(String, String))
	left.Join(right, func(_, l, r any) (any, error) { return l, nil }, JoinTimeDifference(time.Second, 0),
		Materialized(StoreOptions{Name: "j"})).GroupByKey().Count(Materialized(StoreOptions{Name: "counts"}))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	st := topo.subtopologies[0]
	cfg := Config{ApplicationID: "open-tasks", Brokers: []string{"unused:9092"}, StateDir: t.TempDir()}.WithDefaults()
	a := &App{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), hooks: newHookSet(cfg.Hooks)}
	first, second := newTaskOpening(st, TaskID{0, 0}), newTaskOpening(st, TaskID{0, 1})
	dir := func(id TaskID, store string) string {
		return filepath.Join(cfg.StateDir, cfg.ApplicationID, id.String(), store)
	}
	heldName := second.specs[len(second.specs)-1].name
	holder, err := state.Open(state.Options{Dir: dir(second.id, heldName), Identity: cfg.ApplicationID + "/" + second.id.String() + "/" + heldName})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()

	a.openTasksStores([]*taskOpening{first, second})
	stores, err := first.result()
	if err != nil {
		t.Fatalf("the first task's stores: %v", err)
	}
	defer closeTaskStores(stores)
	if len(stores) != len(first.specs) {
		t.Fatalf("the first task has %d stores, want %d", len(stores), len(first.specs))
	}
	if _, err := second.result(); !errors.Is(err, state.ErrLocked) {
		t.Fatalf("the second task's error %v, want one wrapping state.ErrLocked", err)
	}
	for _, spec := range second.specs {
		if spec.name == heldName {
			continue
		}
		if err := state.Destroy(dir(second.id, spec.name)); err != nil {
			t.Errorf("store %q of the second task was left open: %v", spec.name, err)
		}
	}
}

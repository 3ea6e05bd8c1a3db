package streams

import (
	"errors"
	"testing"
)

// TestQueryGivesUpOnBusyTasks holds the tasks as a commit that waits on an
// absent broker does, and checks that a query returns a StoreBusyError
// after queryWait instead of waiting with it.
func TestQueryGivesUpOnBusyTasks(t *testing.T) {
	b := NewBuilder()
	b.Stream([]string{"clicks"}, WithSerdes(String, String)).GroupByKey().
		Count(Materialized(StoreOptions{Name: "counts"}))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(topo, Config{ApplicationID: "busy", Brokers: []string{"127.0.0.1:1"}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a.tasksMu.Lock()
	_, _, err = a.Get("counts", "ada")
	a.tasksMu.Unlock()
	var busy *StoreBusyError
	if !errors.As(err, &busy) || busy.Store != "counts" || busy.Waited != queryWait {
		t.Fatalf("Get while the tasks are held: %v, want a StoreBusyError for counts after %v", err, queryWait)
	}
	if _, _, err := a.Get("counts", "ada"); err != nil {
		t.Errorf("Get once the tasks are free: %v", err)
	}
}

package deploy_test

import (
	"errors"
	"os"
	"testing"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/monitor"
)

// TestWatchDescribesAnApplicationRunElsewhere: an application other
// processes run gets an Info from the design they report, marked Remote,
// and every operation that would drive it says why it cannot.
func TestWatchDescribesAnApplicationRunElsewhere(t *testing.T) {
	h := start(t)
	design, err := os.ReadFile("../designer/testdata/orders-windowed.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.m.Watch(monitor.DeploymentInfo{ID: "shop", ApplicationID: "shop", Standbys: 1, Guarantee: "exactly-once", CommitIntervalMs: 100}, design); err != nil {
		t.Fatal(err)
	}
	info, err := h.m.Get("shop")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Remote || info.ApplicationID != "shop" || info.Standbys != 1 || info.Guarantee != "exactly-once" ||
		len(info.Stores) == 0 || len(info.Operators) == 0 || len(info.SourceTopics) == 0 || string(info.DesignDoc) != string(design) {
		t.Errorf("info %+v: want it remote, with the reported settings, and the design's stores, operators, topics and file", info)
	}
	var remote *deploy.RemoteError
	for name, err := range map[string]error{
		"crash":      h.m.Crash("shop", "i1"),
		"crash-wipe": h.m.CrashWipe("shop", "i1"),
		"stop":       h.m.Stop("shop", "i1"),
		"start":      h.m.Start("shop", "i1"),
		"query": func() error {
			_, err := h.m.Query("shop", deploy.Query{Store: info.Stores[0].Name, Key: "k"})
			return err
		}(),
	} {
		if !errors.As(err, &remote) || remote.ID != "shop" {
			t.Errorf("%s: %v, want a RemoteError for shop", name, err)
		}
	}
	if err := h.m.Watch(monitor.DeploymentInfo{ID: "bad"}, []byte(`{"nodes": 3}`)); err == nil {
		t.Error("Watch took a design that does not decode")
	}
	h.m.Unwatch("shop")
	if _, err := h.m.Get("shop"); !errors.As(err, new(*deploy.NotDeployedError)) {
		t.Errorf("Get after Unwatch: %v, want NotDeployedError", err)
	}
}

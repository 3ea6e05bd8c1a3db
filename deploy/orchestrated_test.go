package deploy_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/monitor"
)

// TestOrchestratedDeployment: an orchestrated deploy runs nothing here
// and writes the record, revision 1 then 2; a second Manager on the same
// brokers (a restarted server) reads it back before Ready; a local
// deploy of the same design replaces it with a tombstone, and the
// telemetry of its application is named by the deployment.
func TestOrchestratedDeployment(t *testing.T) {
	h := start(t)
	info, err := h.m.Deploy(deploy.Request{Design: h.design, Orchestrated: true, Standbys: new(2)})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Orchestrated || !info.Remote || info.Revision != 1 || info.Standbys != 2 || info.RunCommand == "" || len(info.Stores) == 0 {
		t.Errorf("deployed: %+v, want orchestrated revision 1 with 2 standbys, a command and the design's stores", info)
	}
	if h.m.RunsApplication(info.ApplicationID) {
		t.Error("an orchestrated deployment runs here")
	}
	if got := h.m.DeploymentOf(info.ApplicationID); got != h.design {
		t.Errorf("DeploymentOf(%s) = %q, want %q", info.ApplicationID, got, h.design)
	}
	if info, err = h.m.Deploy(deploy.Request{Design: h.design, Orchestrated: true}); err != nil || info.Revision != 2 {
		t.Fatalf("redeployed: %+v %v, want revision 2", info, err)
	}
	if _, err := h.m.Deploy(deploy.Request{Design: h.design, Orchestrated: true, Instances: 2}); !errors.As(err, new(*deploy.RequestError)) {
		t.Errorf("an orchestrated deploy with instances: %v, want a RequestError", err)
	}
	if _, err := h.m.Query(h.design, deploy.Query{Store: info.Stores[0].Name, Key: "k"}); !errors.As(err, new(*deploy.RemoteError)) {
		t.Errorf("a query of an orchestrated deployment: %v, want a RemoteError", err)
	}

	again := restartManager(t, h)
	list := again.List()
	if len(list) != 1 || list[0].ID != h.design || !list[0].Orchestrated || list[0].Revision != 2 {
		t.Fatalf("a second Manager lists %+v, want %s orchestrated at revision 2", list, h.design)
	}

	if info, err = h.m.Deploy(deploy.Request{Design: h.design, Instances: 1}); err != nil || info.Orchestrated {
		t.Fatalf("deployed here: %+v %v", info, err)
	}
	waitFor(t, 10*time.Second, "the second Manager to see the tombstone", func() bool {
		return len(again.List()) == 0
	})
	if err := h.m.Undeploy(h.design); err != nil {
		t.Fatal(err)
	}
}

// restartManager starts another Manager on h's brokers and store and
// waits for its Ready.
func restartManager(t *testing.T, h *harness) *deploy.Manager {
	t.Helper()
	m, err := deploy.NewManager(deploy.Config{Brokers: h.brokers, StateDir: t.TempDir(), Designs: h.store, Monitor: monitor.New(monitor.Options{}),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-m.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the second Manager not ready within 30 s")
	}
	return m
}

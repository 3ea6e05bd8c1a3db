package web

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/monitor"
)

// TestHistoryAPI runs a deployment on a monitor that records its history
// and reads GET /api/deployments/:id/history and
// /api/deployments/:id/snapshot?at= over HTTP: the span grows one instant
// a second, a moment answers the snapshot recorded at or before it, a bad
// moment is a 400, a moment before the history and an unknown deployment
// 404s that say what is missing.
func TestHistoryAPI(t *testing.T) {
	hist, err := monitor.OpenHistory(t.TempDir(), monitor.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the monitor's Run returned: registered first, it
	// runs last.
	t.Cleanup(func() { hist.Close() })
	ts, _ := startLiveMonitor(t, deploy.Config{}, monitor.Options{PublishInterval: 50 * time.Millisecond, History: hist})
	const dep = "orders-windowed"
	firstDeploy(t, ts, `{"design": "orders-windowed", "instances": 2}`)

	// The snapshots come 20 a second and one a second is recorded: wait
	// for three recorded with both instances running tasks.
	read := liveSocket(t, ts, dep)
	var span monitor.HistorySpan
	for {
		if d := read(); d == nil {
			continue
		}
		r := ts.do("GET", "/api/deployments/"+dep+"/history", "")
		if r.status != 200 {
			t.Fatalf("history: %d %s", r.status, r)
		}
		r.decode(t, &span)
		if len(span.Instants) >= 3 {
			var rep monitor.Replay
			ts.do("GET", fmt.Sprintf("/api/deployments/%s/snapshot?at=%d", dep, span.To), "").decode(t, &rep)
			if running(rep.Deployment) == 2 {
				break
			}
		}
	}
	if span.Deployment != dep || span.From != span.Instants[0] || span.To != span.Instants[len(span.Instants)-1] ||
		!slices.IsSorted(span.Instants) || span.RetentionMs != 600_000 {
		t.Errorf("span %+v", span)
	}

	mid := span.Instants[1]
	var rep monitor.Replay
	if r := ts.do("GET", fmt.Sprintf("/api/deployments/%s/snapshot?at=%d", dep, mid+1), ""); r.status != 200 {
		t.Fatalf("snapshot: %d %s", r.status, r)
	} else {
		r.decode(t, &rep)
	}
	if rep.At != mid+1 || rep.Time != mid || rep.Deployment.ID != dep || len(rep.Deployment.Instances) != 2 {
		t.Errorf("snapshot at %d: at %d, time %d, deployment %q with %d instances; want the one at %d", mid+1, rep.At, rep.Time,
			rep.Deployment.ID, len(rep.Deployment.Instances), mid)
	}
	if len(rep.Deployment.Throughput) == 0 || rep.Deployment.Throughput[len(rep.Deployment.Throughput)-1].Time > mid {
		t.Errorf("throughput %+v, want points up to %d", rep.Deployment.Throughput, mid)
	}
	if !slices.ContainsFunc(rep.Events, func(e monitor.Event) bool { return e.Kind == "deployment-added" }) {
		t.Errorf("events %+v, want the deployment-added before the snapshot", rep.Events)
	}

	for _, c := range []struct {
		path   string
		status int
		says   string
	}{
		{"/api/deployments/" + dep + "/snapshot?at=yesterday", 400, "?at=yesterday is not a moment: want unix milliseconds"},
		{"/api/deployments/" + dep + "/snapshot", 400, "?at= is required"},
		{"/api/deployments/" + dep + "/snapshot?at=-5", 400, "?at=-5 is not a moment"},
		{fmt.Sprintf("/api/deployments/%s/snapshot?at=%d", dep, span.From-1), 404, "has no snapshot recorded at or before"},
		{"/api/deployments/nope/snapshot?at=1", 404, `"nope"`},
		{"/api/deployments/nope/history", 404, `"nope"`},
	} {
		r := ts.do("GET", c.path, "")
		var body struct{ Error string }
		r.decode(t, &body)
		if r.status != c.status || !strings.Contains(body.Error, c.says) {
			t.Errorf("GET %s: %d %s, want %d saying %s", c.path, r.status, r, c.status, c.says)
		}
	}
}

// running counts a deployment's running instances with an active task.
func running(d monitor.Deployment) int {
	n := 0
	for _, in := range d.Instances {
		if in.State == "running" && slices.ContainsFunc(in.Tasks, func(t monitor.Task) bool { return t.Role == "active" }) {
			n++
		}
	}
	return n
}

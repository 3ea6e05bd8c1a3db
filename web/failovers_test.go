package web

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/braidstream/braid/monitor"
)

// TestFailoversAPI crashes an instance of a deployment fed by a generator
// and reads GET /api/deployments/:id/failovers: a timeline of the crash
// with one lane per task the instance ran, whose numbers are the failover
// table's (the snapshot's Failovers) for the same task. The one failover
// (GET /api/deployments/:id/failovers/:fid) and its report page
// (/deployments/:id/failovers/:fid) tell the same (checkOneFailover).
func TestFailoversAPI(t *testing.T) {
	ts := startLive(t)
	const dep = "orders-windowed"
	firstDeploy(t, ts, `{"design": "orders-windowed", "instances": 2}`)
	if r := ts.do("POST", "/api/deployments/"+dep+"/generators",
		`{"topic": "orders", "rate": 200, "keys": 50, "keyPrefix": "customer", "template": {"customer": "key", "amount": "random(50, 500)", "ts": "timestamp"}}`); r.status != 201 {
		t.Fatalf("generator: %d %s", r.status, r)
	}
	if r := ts.do("GET", "/api/deployments/nope/failovers", ""); r.status != 404 {
		t.Errorf("failovers of an undeployed design: %d %s", r.status, r)
	}
	var before []monitor.FailoverTimeline
	ts.do("GET", "/api/deployments/"+dep+"/failovers", "").decode(t, &before)
	if len(before) != 0 {
		t.Errorf("failovers before any: %+v", before)
	}
	checkUnknownFailover(t, ts, dep, "1")

	read := liveSocket(t, ts, dep)
	// Wait until both instances run tasks and every active task has
	// processed records: each moved task then resumes on a record.
	var victim []string
	for victim == nil {
		d := read()
		if d == nil || len(d.Instances) != 2 {
			continue
		}
		tasks := map[string][]string{}
		all := true
		for _, in := range d.Instances {
			for _, task := range in.Tasks {
				if task.Role == "active" {
					all = all && in.State == "running" && task.State == "running" && task.Processed > 0
					tasks[in.ID] = append(tasks[in.ID], task.ID)
				}
			}
		}
		if all && len(tasks["instance-1"]) > 0 && len(tasks["instance-2"]) > 0 {
			victim = tasks["instance-1"]
		}
	}
	slices.Sort(victim)
	if r := ts.do("POST", "/api/deployments/"+dep+"/instances/instance-1/crash", ""); r.status != 204 {
		t.Fatalf("crash: %d %s", r.status, r)
	}
	var d *monitor.Deployment
	for {
		d = read()
		if d != nil && len(d.Failovers) >= len(victim) {
			break
		}
	}
	var tls []monitor.FailoverTimeline
	if r := ts.do("GET", "/api/deployments/"+dep+"/failovers", ""); r.status != 200 {
		t.Fatalf("failovers: %d %s", r.status, r)
	} else {
		r.decode(t, &tls)
	}
	if len(tls) != 1 {
		t.Fatalf("%d timelines, want 1: %+v", len(tls), tls)
	}
	tl := tls[0]
	checkOneFailover(t, ts, dep, tl)
	if tl.Cause != "crash" || tl.Instance != "instance-1" || !tl.Done || tl.SessionTimeoutMs != 2000 || tl.End < tl.At {
		t.Errorf("timeline %+v, want the done crash of instance-1 with the 2 s session timeout", tl)
	}
	var lanes []string
	for _, l := range tl.Tasks {
		lanes = append(lanes, l.Task)
		i := slices.IndexFunc(d.Failovers, func(f monitor.Failover) bool { return f.Task == l.Task })
		if i < 0 {
			t.Errorf("lane %s has no failover table row: %+v", l.Task, d.Failovers)
			continue
		}
		f := d.Failovers[i]
		if l.From != f.From || l.To != f.To || l.Replica != f.Replica || l.DetectionMs != f.DetectionMs || l.RecoveryMs != f.RecoveryMs ||
			l.DowntimeMs != f.DowntimeMs || l.Restored != f.Restored {
			t.Errorf("lane %+v, want the failover table's %+v", l, f)
		}
		if n := len(l.Phases); n < 3 || l.Phases[0].Kind != monitor.PhaseProcessing || l.Phases[n-1].Kind != monitor.PhaseProcessing ||
			l.Phases[n-1].Start != f.At {
			t.Errorf("lane %s phases %+v, want processing, the failover, processing again from %d", l.Task, l.Phases, f.At)
		}
	}
	if strings.Join(lanes, ",") != strings.Join(victim, ",") {
		t.Errorf("lanes for %v, want one per task instance-1 ran: %v", lanes, victim)
	}
	if !slices.ContainsFunc(tl.Instances, func(in monitor.InstanceLane) bool {
		return in.Instance == "instance-1" && slices.ContainsFunc(in.Phases, func(p monitor.Phase) bool { return p.Kind == monitor.PhasePaused })
	}) {
		t.Errorf("instance lanes %+v, want instance-1 paused", tl.Instances)
	}
}

// checkUnknownFailover asks for a failover the deployment does not have,
// and of a deployment that is not deployed: 404s that name what is
// missing, as JSON and as the report page.
func checkUnknownFailover(t *testing.T, ts *testServer, dep, fid string) {
	t.Helper()
	r := ts.do("GET", "/api/deployments/"+dep+"/failovers/"+fid, "")
	if e := r.apiErr(t); r.status != 404 || !strings.Contains(e.Error, `failover "`+fid+`"`) || !strings.Contains(e.Error, dep) {
		t.Errorf("unknown failover %s: %d %s, want a 404 naming it and %s", fid, r.status, r, dep)
	}
	if r := ts.do("GET", "/deployments/"+dep+"/failovers/"+fid, ""); r.status != 404 || !strings.Contains(r.String(), "no failover &#34;"+fid+"&#34;") {
		t.Errorf("report of unknown failover %s: %d %s, want a 404 page naming it", fid, r.status, r)
	}
	if r := ts.do("GET", "/api/deployments/nope/failovers/"+fid, ""); r.status != 404 || !strings.Contains(r.String(), "nope") {
		t.Errorf("failover of an undeployed design: %d %s", r.status, r)
	}
}

// checkOneFailover reads a failover alone, as JSON and as its report
// page: the JSON is the list's entry, the page names each moved task with
// its numbers and carries the timeline for the chart and its script.
func checkOneFailover(t *testing.T, ts *testServer, dep string, tl monitor.FailoverTimeline) {
	t.Helper()
	var one monitor.FailoverTimeline
	if r := ts.do("GET", "/api/deployments/"+dep+"/failovers/"+tl.ID, ""); r.status != 200 {
		t.Fatalf("failover %s: %d %s", tl.ID, r.status, r)
	} else {
		r.decode(t, &one)
	}
	if one.ID != tl.ID || one.At != tl.At || one.End != tl.End || len(one.Tasks) != len(tl.Tasks) {
		t.Errorf("failover %s alone: %+v, want the list's %+v", tl.ID, one, tl)
	}
	r := ts.do("GET", "/deployments/"+dep+"/failovers/"+tl.ID, "")
	page := r.String()
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("report of failover %s: %d %s", tl.ID, r.status, page)
	}
	for _, want := range []string{`data-testid="failover-report"`, `data-failover="` + tl.ID + `"`, "crash of instance-1",
		`id="failover-data"`, `"sessionTimeoutMs":2000`, "live/report.js", "report.css", "swimlanes.css", `data-testid="failover-timeline"`} {
		if !strings.Contains(page, want) {
			t.Errorf("report page lacks %s:\n%s", want, page)
		}
	}
	for _, l := range tl.Tasks {
		row := fmt.Sprintf(`data-testid="report-task-%s" data-task="%s" data-detection="%d" data-recovery="%d" data-downtime="%d"`,
			l.Task, l.Task, l.DetectionMs, l.RecoveryMs, l.DowntimeMs)
		if !strings.Contains(page, row) {
			t.Errorf("report page lacks the row %s", row)
		}
	}
	checkUnknownFailover(t, ts, dep, "999")
}

// liveSocket opens the live websocket of a deployment and returns a
// function that reads its next message: the deployment's state when it is
// a snapshot, nil for an event.
func liveSocket(t *testing.T, ts *testServer, dep string) func() *monitor.Deployment {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.base, "http")+"/ws/live?deployment="+dep, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	conn.SetReadLimit(16 << 20)
	return func() *monitor.Deployment {
		t.Helper()
		_, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading the websocket: %v", err)
		}
		var msg monitor.Message
		if err := json.Unmarshal(data, &msg); err != nil {
			t.Fatalf("message is not JSON: %v: %s", err, data)
		}
		if msg.Snapshot == nil || len(msg.Snapshot.Deployments) == 0 {
			return nil
		}
		return &msg.Snapshot.Deployments[0]
	}
}

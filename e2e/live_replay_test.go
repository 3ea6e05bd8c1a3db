package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// failoverTimeline is what the test reads of GET
// /api/deployments/:id/failovers (failoverTimeline).
type failoverTimeline struct {
	Cause    string `json:"cause"`
	Instance string `json:"instance"`
	At       int64  `json:"at"`
	Tasks    []struct {
		Task string `json:"task"`
	} `json:"tasks"`
}

// scrubberJS reads the time cursor: the recorded span and what it shows.
const scrubberJS = `(() => { const s = document.querySelector('[data-testid="scrubber"]'), st = document.querySelector('[data-testid="replay-state"]');
  return { from: Number(s.dataset.from || 0), to: Number(s.dataset.to || 0), value: Number(s.value), state: st.textContent,
    replaying: st.dataset.replaying === 'true', time: Number(st.dataset.time || 0) } })()`

type scrubberState struct {
	From      float64 `json:"from"`
	To        float64 `json:"to"`
	Value     float64 `json:"value"`
	State     string  `json:"state"`
	Replaying bool    `json:"replaying"`
	Time      float64 `json:"time"`
}

// activeOnJS is true when every task of tasks is active on exactly one
// instance, the one want says for it ("instance/instance state/task
// state", a regexp).
func activeOnJS(want map[string]string) string {
	list, _ := json.Marshal(want)
	return `(() => { const a = ` + liveActive + `, w = ` + string(list) + `;
  return Object.entries(w).every(([t, re]) => (a[t] || []).length === 1 && new RegExp(re).test(a[t][0])) })()`
}

// TestLiveReplayBeforeTheCrash opens the demo's live page (its throughput
// chart's x axis, and a chart of one point, span a minute in clock
// times), waits for the monitor to record a few seconds of the settled
// deployment, and crashes an instance. Moving the time cursor to before
// the crash draws the recorded snapshot: the crashed instance's cards are
// back, its tasks active on it and running, no failover is in the table
// and no crash in the event list, whose filter picks from the moment's
// events; the buttons that act on the deployment are disabled, saying
// why, and the throughput chart ends at the moment; the live snapshots
// that keep arriving do not replace it. Live draws the present again:
// the instance crashed, its tasks elsewhere, the crash in the event list,
// the buttons enabled again. Then `braid serve` restarts on the same data
// dir and GET /api/deployments/:id/failovers still tells the crash, read
// back from the monitor's history.
func TestLiveReplayBeforeTheCrash(t *testing.T) {
	s := startServeOn(t, loopback, "", serveBrokerArgs(t)...)
	const id = "orders-demo"
	waitDeployment(t, s.url, id)
	tasks := make([]string, 0, 2*demoPartitions)
	for sub := range 2 {
		for p := range demoPartitions {
			tasks = append(tasks, fmt.Sprintf("%d_%d", sub, p))
		}
	}
	b := newBrowserSized(t, 1600, 1000)
	var settledAt float64
	var fresh, single xAxis
	b.stepWithin(90*time.Second, "open the live view and wait for the tasks to settle",
		chromedp.Navigate(s.url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		// Just after the deploy, the series has few points.
		waitJS(`!!document.querySelector('[data-testid="chart-throughput"]').dataset.xLabels`, 10*time.Second),
		eval(xAxisJS(`document`), &fresh),
		// A chart of one point, drawn by the page's charts module.
		chromedp.Evaluate[chromedp.Void](`import('/static/live/charts.js').then(m => { const box = document.createElement('div'); box.id = 'one-point'; document.body.append(box);
  new m.Charts(box).update({ throughput: [{ t: Date.now(), rps: 1, lag: 0 }] }) })`, chromedp.EvalAwaitPromise),
		waitJS(`!!document.querySelector('#one-point [data-testid="chart-throughput"]')?.dataset.xLabels`, 5*time.Second),
		eval(xAxisJS(`document.querySelector('#one-point')`), &single),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#one-point').remove()`),
		waitJS(settledJS(tasks), 60*time.Second),
		eval(`Date.now()`, &settledAt))
	fresh.check(t, "just after the deploy", 0)
	single.check(t, "with one point", 0)
	const victim = "instance-1"
	var victimTasks []string
	var sc scrubberState
	// The cursor's steps are whole seconds from the span's start: a
	// moment 3 s after the settling has a recorded snapshot of the
	// settled deployment at or before its step.
	b.stepWithin(30*time.Second, "wait for 3 s of the settled deployment to be recorded",
		waitJS(fmt.Sprintf(`(%s).to >= %f`, scrubberJS, settledAt+3000), 20*time.Second),
		eval(fmt.Sprintf(`Array.from(document.querySelectorAll('[data-testid="instance-%s"] [data-role="active"]')).map(c => c.dataset.task)`, victim), &victimTasks),
		eval(scrubberJS, &sc))
	if len(victimTasks) == 0 {
		t.Fatalf("%s runs no active task", victim)
	}
	before := map[string]string{}
	for _, task := range victimTasks {
		before[task] = "^" + victim + "/running/running$"
	}
	target := sc.From + float64(int64(sc.To-sc.From)/1000*1000)

	var crashAt float64
	b.stepWithin(60*time.Second, "crash "+victim+" and see its tasks fail over",
		eval(`Date.now()`, &crashAt),
		chromedp.Click(tid("crash-"+victim)),
		waitJS(fmt.Sprintf(`(() => { const r = `+projectedRowsJS+`.filter(r => r.from === %q); return r.length >= %d && r.every(r => r.downtime >= 0) })()`, victim, len(victimTasks)), 50*time.Second),
		waitJS(fmt.Sprintf(`document.querySelector('[data-testid="instance-%s"]').dataset.state === 'crashed'`, victim), 10*time.Second))

	var snapshots int
	var head string
	b.stepWithin(30*time.Second, "scrub to before the crash and see the crashed instance's cards as they were",
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.querySelector('[data-testid="scrubber"]'); s.value = '%d'; s.dispatchEvent(new Event('input', { bubbles: true })) })()`, int64(target))),
		waitJS(fmt.Sprintf(`(() => { const s = %s; return s.replaying && s.time > 0 && s.time <= %d && /^replaying \d\d:\d\d:\d\d$/.test(s.state) })()`, scrubberJS, int64(target)), 10*time.Second),
		waitJS(activeOnJS(before), 10*time.Second),
		waitJS(`document.querySelectorAll('[data-testid^="failover-"][data-task]').length === 0`, 10*time.Second),
		eval(`Number(document.body.dataset.snapshots)`, &snapshots),
		// Live snapshots keep coming; the replayed one stays drawn, and
		// says how long ago things were of its moment: the last commit
		// (every second) 6 s and more before now was just before it.
		waitJS(fmt.Sprintf(`Number(document.body.dataset.snapshots) >= %d`, snapshots+24), 15*time.Second),
		waitJS(activeOnJS(before), time.Second),
		eval(scrubberJS, &sc),
		eval(fmt.Sprintf(`document.querySelector('[data-testid="instance-%s"] .lv-instance-head').textContent`, victim), &head))
	if sc.Time > crashAt {
		t.Errorf("replayed the snapshot at %v, after the crash at %v", sc.Time, crashAt)
	}
	// The event list is the moment's: its events are of then, no crash
	// among them, and the filter picks from them.
	var replayed xAxis
	b.stepWithin(5*time.Second, "read the replayed chart's x axis",
		waitJS(fmt.Sprintf(`Number(document.querySelector('[data-testid="chart-throughput"]').dataset.xTo) === %d`, int64(sc.Time)), 5*time.Second),
		eval(xAxisJS(`document`), &replayed))
	replayed.check(t, "replaying", sc.Time)
	var locked []actButton
	b.stepWithin(5*time.Second, "see the buttons that act disabled", eval(actButtonsJS, &locked))
	if len(locked) < 4*3+2 {
		t.Errorf("replaying, %d buttons act on the deployment, want an instance's four for each of 3 instances, Add instance and Undeploy: %+v", len(locked), locked)
	}
	for _, a := range locked {
		if !a.Disabled || a.Title != "replaying: press Live to act" {
			t.Errorf("replaying, %s is disabled %v, titled %q: want disabled, titled \"replaying: press Live to act\"", a.ID, a.Disabled, a.Title)
		}
	}
	var evs eventList
	b.stepWithin(10*time.Second, "see the replayed moment's events",
		waitJS(fmt.Sprintf(`(%s).replaying && (%s).time === %d`, eventsJS, scrubberJS, int64(sc.Time)), 5*time.Second),
		eval(eventsJS, &evs),
		setFilter("instance-crashed"),
		waitJS(`document.querySelectorAll('[data-testid="events-list"] > li').length === 0`, 5*time.Second))
	if len(evs.Kinds) == 0 || evs.Newest > sc.Time || slices.Contains(evs.Kinds, "instance-crashed") {
		t.Errorf("replaying %v, the event list has %d events (kinds %v), the newest at %v: want those up to the moment, no crash", sc.Time, len(evs.Kinds), evs.Kinds, evs.Newest)
	}
	if !regexp.MustCompile(`last commit (just now|[12] s ago)`).MatchString(head) {
		t.Errorf("replayed %s: %q, want its last commit just before the moment replayed", victim, head)
	}
	saveSuccessShot(t, b, "live-replay")

	b.stepWithin(30*time.Second, "press Live and see the present: "+victim+" crashed, its tasks elsewhere",
		chromedp.Click(tid("replay-live")),
		waitJS(`document.querySelector('[data-testid="replay-state"]').textContent === 'live'`, 5*time.Second),
		waitJS(fmt.Sprintf(`document.querySelector('[data-testid="instance-%s"]').dataset.state === 'crashed'`, victim), 10*time.Second),
		waitJS(activeOnJS(moved(victimTasks, victim)), 10*time.Second),
		waitJS(fmt.Sprintf(`document.querySelectorAll('[data-testid^="failover-"][data-task]').length >= %d`, len(victimTasks)), 10*time.Second),
		// The live events are back, the crash among them, filtered.
		waitJS(`(() => { const e = `+eventsJS+`; return !e.replaying && e.kinds.length > 0 && e.kinds.every(k => k === 'instance-crashed') })()`, 5*time.Second),
		setFilter(""))
	var unlocked []actButton
	b.stepWithin(5*time.Second, "see the buttons that act enabled again", eval(actButtonsJS, &unlocked))
	for _, a := range unlocked {
		enabled := a.ID == "add-instance" || a.ID == "undeploy" || a.ID == "store-lookup" || a.ID == "start-"+victim ||
			(strings.HasPrefix(a.ID, "crash-") || strings.HasPrefix(a.ID, "stop-")) && !strings.HasSuffix(a.ID, "-"+victim)
		if a.Title == "replaying: press Live to act" || enabled && a.Disabled {
			t.Errorf("live again, %s is disabled %v, titled %q: want it enabled, titled what it does", a.ID, a.Disabled, a.Title)
		}
	}

	// The server restarts on its data dir: the crash is read back.
	s.stop()
	s.start()
	waitDeployment(t, s.url, id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		tls := failoversOf(t, s, id)
		i := slices.IndexFunc(tls, func(tl failoverTimeline) bool { return tl.Cause == "crash" && tl.Instance == victim })
		if i >= 0 {
			var lanes []string
			for _, l := range tls[i].Tasks {
				lanes = append(lanes, l.Task)
			}
			slices.Sort(lanes)
			slices.Sort(victimTasks)
			if !slices.Equal(lanes, victimTasks) || int64(crashAt)-tls[i].At > 5000 {
				t.Errorf("after the restart, the crash of %s at %d moved %v, want %v at about %d", victim, tls[i].At, lanes, victimTasks, int64(crashAt))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the restart, GET /api/deployments/%s/failovers has no crash of %s: %+v", id, victim, tls)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// eventsJS reads the event list: whether it shows a replayed moment, its
// rows' kinds and the newest row's time (unix ms).
const eventsJS = `(() => { const l = document.querySelector('[data-testid="events-list"]'), rows = Array.from(l.children);
  return { replaying: l.dataset.replaying === 'true', kinds: rows.map(r => r.dataset.kind), newest: Math.max(0, ...rows.map(r => Number(r.dataset.time))) } })()`

type eventList struct {
	Replaying bool     `json:"replaying"`
	Kinds     []string `json:"kinds"`
	Newest    float64  `json:"newest"`
}

// xAxisJS reads the x axis of the throughput chart under root.
func xAxisJS(root string) string {
	return `(() => { const d = ` + root + `.querySelector('[data-testid="chart-throughput"]').dataset;
  return { from: Number(d.xFrom), to: Number(d.xTo), labels: (d.xLabels || '').split('|'), points: Number(d.points) } })()`
}

type xAxis struct {
	From   float64  `json:"from"`
	To     float64  `json:"to"`
	Labels []string `json:"labels"`
	Points int      `json:"points"`
}

// check wants the axis to span a minute or more, at most the 5 minutes
// of the series, ending at end (when not 0), labelled in clock times.
func (x xAxis) check(t *testing.T, when string, end float64) {
	t.Helper()
	span := x.To - x.From
	clockTime := regexp.MustCompile(`^\d\d:\d\d:\d\d$`)
	ok := span >= 60_000 && span <= 6*60_000 && len(x.Labels) > 0 && (end == 0 || x.To == end)
	for _, l := range x.Labels {
		ok = ok && clockTime.MatchString(l)
	}
	if !ok {
		t.Errorf("%s, the throughput chart (%d points) spans %v to %v (%.0f s), labelled %q: want a minute or more up to %v, labelled in clock times",
			when, x.Points, time.UnixMilli(int64(x.From)).UTC(), time.UnixMilli(int64(x.To)).UTC(), span/1000, x.Labels, end)
	}
}

// actButtonsJS lists the buttons that act on the live deployment.
const actButtonsJS = `Array.from(document.querySelectorAll('[data-testid^="crash-"], [data-testid^="stop-"], [data-testid^="start-"], [data-testid="add-instance"], [data-testid="undeploy"], [data-testid^="generator-start-"], [data-testid^="generator-stop-"], [data-testid="store-lookup"]'))
  .map(b => ({ id: b.dataset.testid, disabled: b.disabled, title: b.title }))`

type actButton struct {
	ID       string `json:"id"`
	Disabled bool   `json:"disabled"`
	Title    string `json:"title"`
}

// setFilter picks the event list's filter ("" all kinds).
func setFilter(kind string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const f = document.querySelector('[data-testid="event-filter"]'); f.value = %q; f.dispatchEvent(new Event('change', { bubbles: true })) })()`, kind))
}

// moved is what activeOnJS wants of tasks once they left victim: active
// on another running instance.
func moved(tasks []string, victim string) map[string]string {
	out := map[string]string{}
	for _, task := range tasks {
		out[task] = "^(?!" + victim + "/)[^/]+/running/"
	}
	return out
}

func failoversOf(t *testing.T, s *serveProc, id string) []failoverTimeline {
	t.Helper()
	resp, err := s.get("/api/deployments/" + id + "/failovers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET failovers: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var tls []failoverTimeline
	if err := json.Unmarshal(body, &tls); err != nil {
		t.Fatal(err)
	}
	return tls
}

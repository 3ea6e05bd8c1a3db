package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// The failover swimlanes of the live page (static/live/swimlanes.js) and
// the report page of one failover (templates/report.templ).

// swimlaneRowsJS lists the shown chart's task rows: the task, its numbers
// and its phases (kind and ms), and whether every phase has a tooltip
// with its times.
const swimlaneRowsJS = `Array.from(document.querySelectorAll('[data-testid="failover-timeline"] [data-testid^="swimlane-"][data-task]')).map(g => ({
  task: g.dataset.task, from: g.dataset.from, to: g.dataset.to, detection: Number(g.dataset.detection), recovery: Number(g.dataset.recovery),
  downtime: Number(g.dataset.downtime),
  phases: Array.from(g.querySelectorAll('rect[data-phase]')).map(r => ({ kind: r.dataset.phase, ms: Number(r.dataset.ms),
    title: (r.parentNode.querySelector('title') || {}).textContent || '' })) }))`

type swimlaneRow struct {
	Task      string  `json:"task"`
	From      string  `json:"from"`
	To        string  `json:"to"`
	Detection float64 `json:"detection"`
	Recovery  float64 `json:"recovery"`
	Downtime  float64 `json:"downtime"`
	Phases    []struct {
		Kind  string  `json:"kind"`
		Ms    float64 `json:"ms"`
		Title string  `json:"title"`
	} `json:"phases"`
}

// failoverRowsJS lists the failover table's rows: task, from, detection
// and downtime in ms.
const failoverRowsJS = `Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).map(r => {
  const i = r.dataset.testid.slice(9);
  return { task: r.dataset.task, from: r.children[1].textContent.split(' → ')[0], downtime: Number(r.dataset.downtime),
    detection: parseInt(document.querySelector('[data-testid="detection-' + i + '"]').textContent, 10) } })`

type tableRow struct {
	Task      string  `json:"task"`
	From      string  `json:"from"`
	Detection float64 `json:"detection"`
	Downtime  float64 `json:"downtime"`
}

// frameMs is one frame at 50 fps: the most two drawings of one duration
// may differ by.
const frameMs = 20

// keptLane is what the test reads of the kept-running lane.
type keptLane struct {
	Pauses    int      `json:"pauses"`
	Unmoved   int      `json:"unmoved"`
	Suspended []string `json:"suspended"`
	// Times are milliseconds since the epoch; the monitor's carry
	// fractions of a millisecond, so they are read as float64.
	Processing [][]float64 `json:"processing"`
	Pause      []float64   `json:"pause"`
}

// evalAwait runs JavaScript that returns a promise and decodes what it
// resolves to into out.
func evalAwait[T any](js string, out *T) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		v, err := chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise)(ctx, tg)
		*out = v
		return err
	})
}

// TestLiveFailoverTimeline opens the demo's live page, crashes the
// instance with the most active tasks and waits for the crash's timeline:
// one swimlane per task the instance ran, whose detection and downtime
// are the failover table's for the same task, and whose phases add up to
// them within a frame, each with its times in its tooltip. It keeps a
// screenshot of the timeline (failover-timeline.png), then opens the
// failover's report from the "Report" link: the same tasks with the same
// numbers, and the same chart. The tasks that stayed have no pause (the
// demo rebalances cooperatively); drawn with one, their lane is cut there.
func TestLiveFailoverTimeline(t *testing.T) {
	url := startServe(t)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	tasks := make([]string, 0, 2*demoPartitions)
	for sub := range 2 {
		for p := range demoPartitions {
			tasks = append(tasks, fmt.Sprintf("%d_%d", sub, p))
		}
	}
	b := newBrowser(t)
	var active map[string][]string
	b.stepWithin(60*time.Second, "open the live view and wait for every task to run",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		waitJS(settledJS(tasks), 50*time.Second),
		eval(liveActive, &active),
		eval(`document.querySelector('[data-testid="failover-timeline"]').dataset.count`, new(string)))
	perInstance := map[string][]string{}
	for task, where := range active {
		in := strings.SplitN(where[0], "/", 2)[0]
		perInstance[in] = append(perInstance[in], task)
	}
	victim := ""
	for in, ts := range perInstance {
		if victim == "" || len(ts) > len(perInstance[victim]) || len(ts) == len(perInstance[victim]) && in < victim {
			victim = in
		}
	}
	moved := perInstance[victim]
	slices.Sort(moved)
	t.Logf("crashing %s, which runs %v", victim, moved)

	// The crash's timeline is chosen in the selector, should another
	// failover (a probing move) follow it.
	crashOption := fmt.Sprintf(`Array.from(document.querySelectorAll('[data-testid="failover-timeline-select"] option')).find(o => o.textContent.includes('crash of %s'))`, victim)
	var table []tableRow
	var lanes []swimlaneRow
	b.stepWithin(60*time.Second, "crash "+victim+" and see its timeline, done, a row per moved task",
		eval(drawsJS, new(bool)),
		chromedp.Click(tid("crash-"+victim)),
		waitJS(fmt.Sprintf(`(() => { const r = %s.filter(r => r.from === %q); return r.length >= %d && r.every(r => r.downtime >= 0) })()`, failoverRowsJS, victim, len(moved)), 50*time.Second),
		waitJS(`!!`+crashOption, 10*time.Second),
		eval(fmt.Sprintf(`(() => { const s = document.querySelector('[data-testid="failover-timeline-select"]'); s.value = %s.value; return s.dispatchEvent(new Event('change')) })()`, crashOption), new(bool)),
		waitJS(fmt.Sprintf(`(() => { const s = document.querySelector('[data-testid="failover-timeline"]'); const r = %s;
			return s.dataset.done === 'true' && r.length === %d && r.every(r => r.downtime >= 0) })()`, swimlaneRowsJS, len(moved)), 30*time.Second),
		eval(failoverRowsJS, &table),
		eval(swimlaneRowsJS, &lanes))

	var draws []chartDraw
	b.step("read the chart's drawings", eval(`window.braidDraws`, &draws))
	checkGrows(t, draws)

	var laneTasks []string
	for _, l := range lanes {
		laneTasks = append(laneTasks, l.Task)
		i := slices.IndexFunc(table, func(r tableRow) bool { return r.Task == l.Task && r.From == victim })
		if i < 0 {
			t.Errorf("swimlane %s has no failover table row from %s: %+v", l.Task, victim, table)
			continue
		}
		r := table[i]
		t.Logf("task %s: %s → %s, detection %v ms, recovery %v ms, downtime %v ms (table: detection %v, downtime %v), phases %+v",
			l.Task, l.From, l.To, l.Detection, l.Recovery, l.Downtime, r.Detection, r.Downtime, l.Phases)
		if l.Detection != r.Detection || l.Downtime != r.Downtime {
			t.Errorf("swimlane %s: detection %v ms, downtime %v ms; the failover table says %v and %v", l.Task, l.Detection, l.Downtime, r.Detection, r.Downtime)
		}
		checkPhases(t, l)
	}
	if !slices.Equal(laneTasks, moved) {
		t.Errorf("swimlanes for %v, want one per task %s ran: %v", laneTasks, victim, moved)
	}
	var shape struct {
		Instances int    `json:"instances"`
		Session   string `json:"session"`
		Legend    int    `json:"legend"`
		Axis      string `json:"axis"`
	}
	b.step("scroll the timeline into view",
		eval(`(() => { const s = document.querySelector('[data-testid="failover-timeline"]'); s.scrollIntoView({block: 'start'}); window.scrollBy(0, -document.querySelector('[data-testid="live-toolbar"]').offsetHeight - 8);
			return { instances: s.querySelectorAll('[data-testid^="swimlane-instance-"]').length,
				session: (s.querySelector('[data-testid="session-timeout"]') || {dataset: {}}).dataset.ms || '',
				legend: s.querySelectorAll('.sl-legend-item').length, axis: (s.querySelector('.sl-axis-title') || {}).textContent || '' } })()`, &shape))
	saveSuccessShot(t, b, "failover-timeline")
	if shape.Instances != 3 || shape.Session == "" || shape.Legend < 8 || !strings.Contains(shape.Axis, "crash of "+victim) {
		t.Errorf("chart %+v, want 3 instance rows, the session timeout, the legend and an axis from the crash of %s", shape, victim)
	}
	// The demo rebalances cooperatively: the tasks that stayed never
	// paused. Drawn with a pause (as under eager), the kept-running lane
	// is cut there.
	var kept keptLane
	b.step("draw the kept-running lane with a pause",
		evalAwait(fmt.Sprintf(`import('/static/live/swimlanes.js').then(m => {
  const tl = window.braidLive.dep.timelines.find(tl => tl.cause === 'crash' && tl.instance === %q);
  const pause = [tl.at + 50, tl.at + 150];
  const svg = m.drawTimeline({ ...tl, pauses: [{ task: tl.unmoved[0], instance: 'somewhere', start: pause[0], end: pause[1] }] });
  const lane = svg.querySelector('[data-testid="swimlane-unmoved"]');
  return { pauses: tl.pauses.length, unmoved: tl.unmoved.length, pause,
    suspended: Array.from(lane.querySelectorAll('[data-phase="suspended"]')).map(r => r.dataset.task),
    processing: Array.from(lane.querySelectorAll('[data-phase="processing"]')).map(r => [Number(r.dataset.start), Number(r.dataset.end)]) } })`, victim), &kept))
	if kept.Pauses != 0 || kept.Unmoved == 0 || len(kept.Suspended) != 1 || len(kept.Processing) != 2 ||
		kept.Processing[0][1] != kept.Pause[0] || kept.Processing[1][0] != kept.Pause[1] {
		t.Errorf("the kept-running lane: %+v, want no pause of its own (cooperative), and drawn with one, processing cut around it", kept)
	}

	var href string
	b.step("read the Report link", eval(`document.querySelector('[data-testid="failover-report-link"]').getAttribute('href')`, &href))
	var report []tableRow
	var chartRows int
	b.step("open the report",
		chromedp.Navigate(url+href),
		chromedp.WaitVisible(chromedp.CSS(`body[data-report-ready="true"]`)),
		eval(`Array.from(document.querySelectorAll('[data-testid^="report-task-"]')).map(r => ({ task: r.dataset.task, from: r.children[1].textContent.split(' → ')[0],
			detection: Number(r.dataset.detection), downtime: Number(r.dataset.downtime) }))`, &report),
		eval(`document.querySelectorAll('[data-testid="failover-timeline"] [data-testid^="swimlane-"][data-task]').length`, &chartRows))
	saveSuccessShot(t, b, "failover-report")
	// On paper: the links and the button go, the chart stays; the PDF is
	// kept beside the screenshots.
	var onPaper struct {
		Nav   string  `json:"nav"`
		Chart float64 `json:"chart"`
	}
	b.step("see the report as printed",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"})
			return err
		}),
		eval(`({ nav: getComputedStyle(document.querySelector('.rp-noprint')).display,
			chart: document.querySelector('[data-testid="failover-timeline"] svg').getBoundingClientRect().height })`, &onPaper))
	if onPaper.Nav != "none" || onPaper.Chart <= 0 {
		t.Errorf("printed, the report's links show as %q and its chart is %v px high; want none and the chart", onPaper.Nav, onPaper.Chart)
	}
	savePDF(t, b, "failover-report")
	if chartRows != len(moved) {
		t.Errorf("the report's chart has %d task rows, want %d", chartRows, len(moved))
	}
	var reportTasks []string
	for _, r := range report {
		reportTasks = append(reportTasks, r.Task)
		i := slices.IndexFunc(lanes, func(l swimlaneRow) bool { return l.Task == r.Task })
		if i < 0 || r.From != victim || r.Detection != lanes[i].Detection || r.Downtime != lanes[i].Downtime {
			t.Errorf("report row %+v, want the live page's swimlane of the task from %s", r, victim)
		}
	}
	if !slices.Equal(reportTasks, moved) {
		t.Errorf("report of %s lists %v, want %v", href, reportTasks, moved)
	}
}

// drawsJS records in window.braidDraws each drawing of the live page's
// swimlane chart: its failover, whether done, and the end of the time it
// shows.
const drawsJS = `(() => { const s = document.querySelector('[data-testid="failover-timeline"]'); window.braidDraws = [];
  new MutationObserver(() => { const c = s.querySelector('[data-testid="swimlane-chart"]');
    if (c) window.braidDraws.push({ failover: c.dataset.failover, done: c.dataset.done === 'true', to: Number(c.dataset.to) }) })
    .observe(s.querySelector('.sl-chart-wrap'), { childList: true }); return true })()`

type chartDraw struct {
	Failover string  `json:"failover"`
	Done     bool    `json:"done"`
	To       float64 `json:"to"`
}

// checkGrows checks that a failover drawn while in progress grew from one
// snapshot to the next: each of its drawings shows later than the one
// before. How many there were depends on when the snapshots fell.
func checkGrows(t *testing.T, draws []chartDraw) {
	t.Helper()
	last := map[string]float64{}
	open := 0
	for _, d := range draws {
		if d.Done {
			continue
		}
		open++
		if prev, ok := last[d.Failover]; ok && d.To <= prev {
			t.Errorf("failover %s in progress drawn to %v after %v: it did not grow", d.Failover, d.To, prev)
		}
		last[d.Failover] = d.To
	}
	t.Logf("%d drawings of the chart, %d of a failover in progress", len(draws), open)
}

// savePDF prints the page to a PDF (A4, as its CSS asks) where
// saveSuccessShot keeps its screenshots, and logs where.
func savePDF(t *testing.T, b *browser, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	pdf, err := chromedp.Run(ctx, chromedp.PrintToPDF(chromedp.PDFPreferCSSPageSize(), chromedp.PDFPrintBackground()))
	if err != nil || !bytes.HasPrefix(pdf, []byte("%PDF")) {
		t.Errorf("printing the %s to PDF: %v (%d bytes)", name, err, len(pdf))
		return
	}
	file := filepath.Join(os.TempDir(), "braid-e2e-"+name+".pdf")
	if artifactsKept() {
		file = filepath.Join(t.ArtifactDir(), name+".pdf")
	}
	if err := os.WriteFile(file, pdf, 0o644); err != nil {
		t.Errorf("writing %s: %v", file, err)
		return
	}
	t.Logf("the %s printed: %s", strings.ReplaceAll(name, "-", " "), file)
}

// checkPhases checks a moved task's lane: processing first and last, the
// group's noticing, and a recovery (a standby promoted or a restore); the
// phases from the failure to the recovery take the detection, the
// recovery the recovery, within a frame; each tooltip has its times.
func checkPhases(t *testing.T, l swimlaneRow) {
	t.Helper()
	n := len(l.Phases)
	if n < 4 || l.Phases[0].Kind != "processing" || l.Phases[n-1].Kind != "processing" || l.Phases[1].Kind != "detecting" {
		t.Errorf("swimlane %s phases %+v, want processing, detecting, …, processing", l.Task, l.Phases)
		return
	}
	var noticing, recovery float64
	recovered := false
	for _, p := range l.Phases[1 : n-1] {
		switch p.Kind {
		case "detecting", "rebalancing":
			noticing += p.Ms
		case "promoting", "restoring":
			recovery += p.Ms
			recovered = true
		}
		if !strings.Contains(p.Title, " UTC · "+strconv.FormatFloat(p.Ms, 'f', -1, 64)+" ms") {
			t.Errorf("swimlane %s: the %s phase's tooltip %q lacks its times and duration", l.Task, p.Kind, p.Title)
		}
	}
	if !recovered {
		t.Errorf("swimlane %s has no promoting or restoring phase: %+v", l.Task, l.Phases)
	}
	if d := noticing - l.Detection; d > frameMs || d < -frameMs {
		t.Errorf("swimlane %s: noticing phases take %v ms, the detection is %v ms", l.Task, noticing, l.Detection)
	}
	if d := recovery - l.Recovery; d > frameMs || d < -frameMs {
		t.Errorf("swimlane %s: recovery phases take %v ms, the recovery is %v ms", l.Task, recovery, l.Recovery)
	}
}

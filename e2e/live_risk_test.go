package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// riskJS lists each instance's risk line: its id, whether the page calls
// losing it safe, the projected downtime, whether it is marked the
// riskiest, and the line.
const riskJS = `Array.from(document.querySelectorAll('[data-testid^="risk-"]')).filter(e => !e.hidden).map(e => ({
  instance: e.dataset.testid.slice(5), safe: e.dataset.safe === 'true', projected: Number(e.dataset.projectedMs),
  riskiest: e.dataset.riskiest === 'true', text: e.textContent }))`

type riskLine struct {
	Instance  string  `json:"instance"`
	Safe      bool    `json:"safe"`
	Projected float64 `json:"projected"`
	Riskiest  bool    `json:"riskiest"`
	Text      string  `json:"text"`
}

// projectedRowsJS lists the failover table's rows: task, from, measured
// and projected downtime (-1 none) and whether the projection said safe.
const projectedRowsJS = `Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).map(r => {
  const i = r.dataset.testid.slice(9), p = document.querySelector('[data-testid="projected-' + i + '"]');
  return { task: r.dataset.task, from: r.children[1].textContent.split(' → ')[0], downtime: Number(r.dataset.downtime),
    projected: p ? Number(p.dataset.projected) : -2, safe: p ? p.dataset.safe === 'true' : false, cell: p ? p.textContent : '' } })`

type projectedRow struct {
	Task      string  `json:"task"`
	From      string  `json:"from"`
	Downtime  float64 `json:"downtime"`
	Projected float64 `json:"projected"`
	Safe      bool    `json:"safe"`
	Cell      string  `json:"cell"`
}

// TestLiveWhatIfItDiedNow opens the demo's live page (three instances,
// one standby per task) and reads each instance's "what if it died now"
// line once the standbys caught up: every instance is safe, one is marked
// the riskiest. It crashes one the page calls safe: each of its tasks'
// failover rows shows the projection made before the crash, safe, beside
// the measured downtime, which is within it.
func TestLiveWhatIfItDiedNow(t *testing.T) {
	url := startServe(t)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	tasks := make([]string, 0, 2*demoPartitions)
	for sub := range 2 {
		for p := range demoPartitions {
			tasks = append(tasks, fmt.Sprintf("%d_%d", sub, p))
		}
	}
	b := newBrowserSized(t, 1600, 1000)
	var lines []riskLine
	b.stepWithin(90*time.Second, "open the live view and wait for every instance to be safe to lose",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		waitJS(settledJS(tasks), 50*time.Second),
		waitJS(`(() => { const l = `+riskJS+`; return l.length === 3 && l.every(x => x.safe && x.projected > 0 && /^safe: every task has/.test(x.text)) && l.filter(x => x.riskiest).length === 1 })()`, 60*time.Second),
		eval(riskJS, &lines))
	t.Logf("risk lines: %+v", lines)
	victim := ""
	for _, l := range lines {
		if l.Safe && (victim == "" || l.Instance < victim) {
			victim = l.Instance
		}
	}
	var moved int
	b.stepWithin(10*time.Second, "count the victim's active tasks",
		eval(fmt.Sprintf(`document.querySelectorAll('[data-testid="instance-%s"] [data-role="active"]').length`, victim), &moved))
	if moved == 0 {
		t.Fatalf("%s runs no active task", victim)
	}

	var rows []projectedRow
	b.stepWithin(60*time.Second, "crash "+victim+" and see its tasks' failovers with their projections",
		chromedp.Click(tid("crash-"+victim)),
		waitJS(fmt.Sprintf(`(() => { const r = `+projectedRowsJS+`.filter(r => r.from === %q); return r.length >= %d && r.every(r => r.downtime >= 0) })()`, victim, moved), 50*time.Second),
		eval(projectedRowsJS, &rows))
	saveSuccessShot(t, b, "live-what-if")
	for _, r := range rows {
		if r.From != victim {
			continue
		}
		t.Logf("failover of %s: downtime %v ms, projected %v ms (%s), safe %v", r.Task, r.Downtime, r.Projected, r.Cell, r.Safe)
		if r.Projected <= 0 || !r.Safe || r.Cell != fmt.Sprint(r.Projected) {
			t.Errorf("task %s: projected cell %q (%v ms, safe %v), want the safe projection made before the crash", r.Task, r.Cell, r.Projected, r.Safe)
		} else if r.Downtime > r.Projected {
			t.Errorf("task %s: measured downtime %v ms beyond the projected %v ms", r.Task, r.Downtime, r.Projected)
		}
	}
}

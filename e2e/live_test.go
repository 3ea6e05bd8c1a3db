package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The live page's DOM as the test reads it (static/live/instances.js and
// timeline.js): instance rows [data-testid=instance-<id>] with data-instance
// and data-state, task cards in them with data-task, data-role, data-state
// and data-stream-time; events [data-kind] in events-list; failover rows
// failover-<n> with data-downtime.

// liveActive maps each task id to where it is active: "instance/instance
// state/task state" for every active card.
const liveActive = `(() => {
  const out = {};
  for (const row of document.querySelectorAll('[data-testid^="instance-"][data-instance]')) {
    for (const c of row.querySelectorAll('[data-role="active"]')) {
      (out[c.dataset.task] = out[c.dataset.task] || []).push(row.dataset.instance + '/' + row.dataset.state + '/' + c.dataset.state);
    }
  }
  return out;
})()`

// settledJS is true when every task of tasks is active on exactly one
// running instance, and running there.
func settledJS(tasks []string) string {
	list, _ := json.Marshal(tasks)
	return `(() => { const a = ` + liveActive + `; return ` + string(list) + `.every(t => (a[t] || []).length === 1 && /\/running\/running$/.test(a[t][0])); })()`
}

// watchPausesJS installs in the page a watch over the active cards running
// on every instance but victim, and returns how many it watches. A pause
// is what the page shows of a rebalance stopping such a task on its
// instance: its active card leaves the instance's row (a task that stops
// there, suspended or handed over), its data-state leaves "running" (the
// monitor's "suspended" while a rebalance holds it, or "restoring"), or its
// data-suspensions grows (a suspension between two snapshots, too short
// for a card to show). A MutationObserver checks every watched card at
// each change of the instance list, and window.braidPauses.stop() checks
// once more, disconnects and returns what it saw, each pause with the ms
// since the watch began. A task whose card left because it now runs on
// another instance did not stay: the assignor may trade a survivor's
// task for a crashed one's caught-up standby, so that neither restores
// (assign.swapToReplicas), and a move pauses a task under any protocol.
// Such a task is returned among the moved, with its pauses, not among
// the pauses.
func watchPausesJS(victim string) string {
	return fmt.Sprintf(`(() => {
  const victim = %q, began = performance.now(), watched = new Map(), pauses = [];
  for (const row of document.querySelectorAll('[data-testid^="instance-"][data-instance]')) {
    if (row.dataset.instance === victim) continue;
    for (const c of row.querySelectorAll('[data-role="active"][data-state="running"]')) {
      watched.set(row.dataset.instance + '/' + c.dataset.task, {seen: 'running', suspensions: Number(c.dataset.suspensions || 0)});
    }
  }
  const check = () => {
    const at = Math.round(performance.now() - began);
    for (const [key, w] of watched) {
      const [instance, task] = key.split('/');
      const row = document.querySelector('[data-testid="instance-' + instance + '"]');
      const card = row && Array.from(row.querySelectorAll('[data-task="' + task + '"]')).find(c => c.dataset.role === 'active');
      const seen = !card ? 'active card gone' : card.dataset.state !== 'running' ? 'state ' + card.dataset.state : 'running';
      if (seen !== w.seen && seen !== 'running') pauses.push({task, instance, seen, at});
      w.seen = seen;
      const n = card ? Number(card.dataset.suspensions || 0) : w.suspensions;
      if (n > w.suspensions) pauses.push({task, instance, seen: 'suspensions ' + w.suspensions + ' -> ' + n, at});
      w.suspensions = n;
    }
  };
  const observer = new MutationObserver(check);
  observer.observe(document.querySelector('[data-testid="instance-list"]'),
    {subtree: true, childList: true, attributes: true, attributeFilter: ['data-state', 'data-role', 'data-suspensions']});
  const runsElsewhere = (instance, task) => Array.from(document.querySelectorAll('[data-testid^="instance-"][data-instance]'))
    .some(row => row.dataset.instance !== instance && row.dataset.instance !== victim &&
      Array.from(row.querySelectorAll('[data-task="' + task + '"]')).some(c => c.dataset.role === 'active'));
  window.braidPauses = {stop: () => {
    check();
    observer.disconnect();
    const moved = pauses.filter(p => runsElsewhere(p.instance, p.task));
    return {pauses: pauses.filter(p => !moved.includes(p)), moved};
  }};
  return watched.size;
})()`, victim)
}

// pause is one pause the watch of watchPausesJS saw.
type pause struct {
	Task     string `json:"task"`
	Instance string `json:"instance"`
	Seen     string `json:"seen"`
	At       int64  `json:"at"` // ms since the watch began, just before the crash
}

// demoPartitions is the partition count of the demo's topics (orders and
// the repartition topic): the demo deployment has tasks 0_0..0_3 and
// 1_0..1_3.
const demoPartitions = 4

// waitDeployment waits until braid serve knows the deployment: one of
// its own or an application it watches through telemetry.
func waitDeployment(t *testing.T, url, id string) {
	t.Helper()
	waitDeploymentBy(t, func(path string) (*http.Response, error) { return http.Get(url + path) }, id)
}

// waitDeploymentBy is waitDeployment with get doing the GETs of the
// server's paths.
func waitDeploymentBy(t *testing.T, get func(path string) (*http.Response, error), id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := get("/api/deployments/" + url.PathEscape(id))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /api/deployments/%s did not answer 200 within 30 s: %v", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitJS waits up to timeout for a JavaScript condition.
func waitJS(js string, timeout time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout))
}

// saveSuccessShot keeps a screenshot of a passing run: in the artifact
// directory with go test -artifacts, else in one file of the temporary
// directory that each run overwrites.
func saveSuccessShot(t *testing.T, b *browser, name string) {
	t.Helper()
	png, err := screenshot(b)
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	file := filepath.Join(os.TempDir(), "braid-e2e-"+name+".png")
	if artifactsKept() {
		file = filepath.Join(t.ArtifactDir(), name+".png")
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Logf("writing %s: %v", file, err)
		return
	}
	t.Logf("screenshot of the %s: %s", strings.ReplaceAll(name, "-", " "), file)
}

// TestLiveFailover opens the demo deployment's live view, sees stream time
// advance and a window close, crashes an instance with active tasks, sees
// its tasks fail over (cards, failover table, none stuck) while the other
// instances' tasks never pause (see watchPausesJS), starts it again
// to see it take tasks, and redeploys the design from the editor's dialog.
func TestLiveFailover(t *testing.T) {
	url := startServe(t)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	b := newBrowser(t)
	start := time.Now()

	b.step("open the live view",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="connection"][data-state="open"]`)),
		until(`document.querySelectorAll('[data-testid^="instance-"][data-instance]').length === 3`),
		until(`Array.from(document.querySelectorAll('[data-role="active"]')).some(c => Number(c.dataset.streamTime) > 0)`),
		chromedp.WaitVisible(tid("live-node-source")))

	// Stream time advances for a task, on its active card: on whichever
	// instance runs it by then, since a rebalance of the start (warm-ups
	// caught up) may move it meanwhile.
	var task string
	var first int64
	activeCard := func(task string) string {
		return fmt.Sprintf(`Array.from(document.querySelectorAll('[data-role="active"][data-task=%q]'))`, task)
	}
	b.step("read a task's stream time",
		eval(`(() => { const c = Array.from(document.querySelectorAll('[data-role="active"]')).find(c => Number(c.dataset.streamTime) > 0); return c.dataset.task; })()`, &task),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			v, err := chromedp.Evaluate[string](fmt.Sprintf(`%s.map(c => Number(c.dataset.streamTime)).reduce((a, b) => Math.max(a, b), -1).toString()`, activeCard(task)))(ctx, tg)
			if err == nil {
				_, err = fmt.Sscan(v, &first)
			}
			return err
		}))
	b.step("see it advance",
		until(fmt.Sprintf(`%s.some(c => Number(c.dataset.streamTime) > %d)`, activeCard(task), first)))
	var shown string
	b.step("read the clock on the card", eval(fmt.Sprintf(`%s.find(c => Number(c.dataset.streamTime) > %d).querySelector('.lv-task-time').textContent`, activeCard(task), first), &shown))
	card := "task " + task
	if len(shown) < 8 || strings.Count(shown, ":") != 2 {
		t.Errorf("stream time on %s reads %q, want a clock time", card, shown)
	}

	// A window closes: the demo's windows are 10 s with 5 s grace.
	b.stepWithin(40*time.Second, "see a window close",
		waitJS(`!!document.querySelector('[data-testid="events-list"] [data-kind="window-closed"]')`, 35*time.Second),
		chromedp.WaitVisible(tid("closed-0")))

	// Every task is active once before the crash: the demo reads a topic
	// of demoPartitions partitions in two sub-topologies (the second after
	// the repartition by customer).
	tasks := make([]string, 0, 2*demoPartitions)
	for sub := range 2 {
		for p := range demoPartitions {
			tasks = append(tasks, fmt.Sprintf("%d_%d", sub, p))
		}
	}
	// And the group has settled on all three instances: on Apache Kafka
	// (group.initial.rebalance.delay.ms=0 in the tests) the first member
	// to join takes every task alone, and the others get theirs in the
	// rebalances their joins start, a few heartbeats later.
	var active map[string][]string
	b.stepWithin(40*time.Second, "wait for every task to run, on every instance",
		waitJS(fmt.Sprintf(`%s && new Set(Object.values(%s).map(w => w[0].split('/')[0])).size === 3`, settledJS(tasks), liveActive), 35*time.Second),
		eval(liveActive, &active))
	if got := keys(active); !slices.Equal(got, tasks) {
		t.Fatalf("active tasks %v, want %v", got, tasks)
	}
	saveSuccessShot(t, b, "live-healthy")

	// The store browser: the windows of one customer, from the instance
	// that holds them.
	var windowRows int
	b.stepWithin(30*time.Second, "query customer-1's windows in the store browser",
		chromedp.SetValue(tid("store-key"), "customer-1"),
		chromedp.Click(tid("store-lookup")),
		waitJS(`document.querySelector('[data-testid="store-result"]').dataset.found === "true"`, 20*time.Second),
		eval(`document.querySelectorAll('[data-testid="store-rows"] tbody tr').length`, &windowRows))
	if windowRows == 0 {
		t.Error("the store browser found customer-1 but shows no window")
	}

	// Crash the instance that has the most active tasks.
	perInstance := map[string]int{}
	for _, where := range active {
		perInstance[strings.SplitN(where[0], "/", 2)[0]]++
	}
	victim := ""
	for inst, n := range perInstance {
		if victim == "" || n > perInstance[victim] || n == perInstance[victim] && inst < victim {
			victim = inst
		}
	}
	// From the crash until the failover is over, the tasks of the other
	// instances run on: a cooperative rebalance stops only the tasks that
	// move, and the victim's tasks move to instances that keep theirs.
	var failoversBefore, watched int
	b.step("crash "+victim,
		eval(`document.querySelectorAll('[data-testid^="failover-"][data-task]').length`, &failoversBefore),
		eval(watchPausesJS(victim), &watched),
		chromedp.Click(tid("crash-"+victim)),
		until(fmt.Sprintf(`document.querySelector('[data-testid="instance-%s"]').dataset.state === "crashed"`, victim)))

	b.stepWithin(45*time.Second, "see its tasks fail over",
		waitJS(fmt.Sprintf(`(() => { const a = %s; const row = document.querySelector('[data-testid="instance-%s"]');
			return %s && row.querySelectorAll('[data-role="active"]').length === 0; })()`, liveActive, victim, settledJS(tasks)), 40*time.Second),
		waitJS(fmt.Sprintf(`Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).filter(r => /^\d+$/.test(r.dataset.downtime)).length > %d`, failoversBefore), 20*time.Second))
	var seen struct{ Pauses, Moved []pause }
	b.step("read the pauses of the other instances' tasks", eval(`window.braidPauses.stop()`, &seen))
	pauses := seen.Pauses
	for _, p := range seen.Moved {
		t.Logf("task %s moved off %s to another surviving instance (%s, %d ms after the crash)", p.Task, p.Instance, p.Seen, p.At)
	}
	if watched == 0 {
		t.Errorf("no active task ran on an instance other than %s before the crash: the pause check watched nothing", victim)
	}
	for _, p := range pauses {
		t.Errorf("task %s on %s paused while the tasks of %s failed over: %s, %d ms after the crash", p.Task, p.Instance, victim, p.Seen, p.At)
	}
	t.Logf("%d active tasks of the other instances watched through the failover, %d pauses", watched, len(pauses))
	var rows []struct {
		Task     string `json:"task"`
		Downtime string `json:"downtime"`
	}
	b.step("read the failover table",
		eval(`Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).map(r => ({task: r.dataset.task, downtime: r.dataset.downtime}))`, &rows))
	t.Logf("failovers after crashing %s: %+v", victim, rows)
	moved := 0
	for _, r := range rows {
		if contains(tasks, r.Task) && r.Downtime != "" {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no failover row with a downtime for the tasks of %s: %+v", victim, rows)
	}

	// Started again, the instance rejoins and gets its share of tasks,
	// replicas among them: the assignor spreads standbys by load, and
	// places warm-ups where a task should move.
	var roles []string
	b.stepWithin(45*time.Second, "start "+victim+" again and see it receive standbys or warm-ups",
		chromedp.Click(tid("start-"+victim)),
		waitJS(fmt.Sprintf(`document.querySelector('[data-testid="instance-%s"]').dataset.state === "running"`, victim), 20*time.Second),
		waitJS(fmt.Sprintf(`document.querySelector('[data-testid="instance-%s"]').querySelectorAll('[data-role="standby"], [data-role="warmup"]').length > 0`, victim), 20*time.Second),
		waitJS(settledJS(tasks), 20*time.Second),
		eval(fmt.Sprintf(`Array.from(document.querySelector('[data-testid="instance-%s"]').querySelectorAll('[data-role]')).map(c => c.dataset.task + ':' + c.dataset.role)`, victim), &roles))
	t.Logf("%s after its restart: %v", victim, roles)

	// The editor knows the design is deployed, and redeploys it from its
	// dialog, exactly-once this time, landing on the live view again.
	var guarantee []string
	b.step("open the editor of the deployed design",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.WaitVisible(tid("live-link")),
		chromedp.WaitVisible(tid("undeploy-design")))
	b.step("open the deploy dialog",
		chromedp.Click(tid("deploy")),
		chromedp.WaitVisible(tid("deploy-dialog")),
		until(`document.querySelector('[data-testid="deploy-instances"]').value === "3" && document.querySelector('[data-testid="deploy-standbys"]').value === "1" && document.querySelector('[data-testid="deploy-commit-interval"]').value === "1000"`),
		eval(`Array.from(document.querySelector('[data-testid="deploy-guarantee"]').options).map(o => o.value + (o.disabled ? ':disabled' : ''))`, &guarantee))
	if !slices.Equal(guarantee, []string{"at-least-once", "exactly-once"}) {
		t.Errorf("guarantee options %v, want at-least-once and exactly-once", guarantee)
	}
	// A commit interval left at at-least-once's default follows the
	// guarantee to exactly-once's.
	var changed bool
	b.step("choose exactly-once",
		eval(`(() => { const g = document.querySelector('[data-testid="deploy-guarantee"]'); g.value = 'exactly-once'; return g.dispatchEvent(new Event('change', {bubbles: true})) })()`, &changed),
		until(`document.querySelector('[data-testid="deploy-commit-interval"]').value === "100"`))
	// Redeploying stops the deployment and starts it again, then the page
	// navigates: the click and the wait are one step, so that no
	// screenshot is taken between them.
	b.stepWithin(60*time.Second, "redeploy and land on the live view",
		chromedp.Click(tid("deploy-submit")),
		chromedp.WaitVisible(chromedp.CSS(`body.live-page[data-live-ready="true"]`)))
	b.stepWithin(45*time.Second, "see the redeployed tasks run exactly-once",
		waitJS(`document.querySelector('[data-testid="deployment-summary"]').textContent.includes('exactly-once')`, 10*time.Second),
		waitJS(`Array.from(document.querySelectorAll('[data-role="active"]')).some(c => Number(c.dataset.streamTime) > 0)`, 30*time.Second))
	t.Logf("live failover walk-through took %s", time.Since(start).Round(time.Second))
}

func keys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

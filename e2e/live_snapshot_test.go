package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestLiveCrashWipeRestoresFromSnapshot deploys the demo from its editor
// to processes you start, with store snapshots on in a directory of the
// test's, and runs one `braid run --deployment` process, which snapshots
// each store every 2 s (--snapshot-interval) and which the test restarts
// whenever it exits, as an orchestrator would. The live page shows the
// snapshots taken as events with their size and duration. "crash + wipe
// disk" on its instance deletes its state and ends it; started again, it
// restores each store from its newest snapshot and then only the
// changelog written since, and the restore events say so (as the
// restore bar does, when the tail is long enough for the page to see it).
func TestLiveCrashWipeRestoresFromSnapshot(t *testing.T) {
	t.Setenv("BRAID_CONTROL_SECRET", "e2e-control-secret")
	addr := freePort(t)
	url := startServeWith(t, "--broker-listen", addr, "--no-demo")
	startBraid(t, loopback, "produced", "gen", "--topic", "orders", "--brokers", addr)
	blobs := "file://" + filepath.ToSlash(t.TempDir())

	b := newBrowser(t)
	b.step("open the demo's editor and its deploy dialog",
		chromedp.Navigate(url+"/designs/orders-demo"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.Click(tid("deploy")),
		chromedp.WaitVisible(tid("deploy-dialog")))
	b.stepWithin(45*time.Second, "deploy to processes you start with snapshots in "+blobs,
		chromedp.SetValue(tid("deploy-where"), "processes"),
		until(`document.querySelector('[data-testid="deploy-where"]').dispatchEvent(new Event('change', {bubbles: true}))`),
		chromedp.Click(tid("deploy-snapshots")),
		chromedp.SendKeys(tid("deploy-snapshot-url"), blobs),
		chromedp.Click(tid("deploy-submit")),
		chromedp.WaitVisible(chromedp.CSS(`body.live-page[data-live-ready="true"][data-orchestrated="true"]`)))

	orchestrate(t, loopback, "run", "--deployment", "orders-demo", "--brokers", addr, "--instance-id", "i1",
		"--state-dir", t.TempDir(), "--session-timeout", "5s", "--snapshot-interval", "2s")
	// Every task that keeps a store (the windowed count's, sub-topology
	// 1) snapshots it before the crash, so that every restore can use one.
	const storeTasks = `Array.from(document.querySelectorAll('[data-testid^="task-i1-1_"][data-role="active"]')).map(c => c.dataset.task)`
	const snapshotted = `new Set(Array.from(document.querySelectorAll('[data-testid="events-list"] [data-kind="snapshot-taken"]')).filter(li => JSON.parse(li.title).snapshotBytes > 0).map(li => li.querySelector('.lv-where').textContent.replace(/^.*task /, '')))`
	var tasks []string
	var taken string
	b.stepWithin(2*time.Minute, "see i1 run and each of its stores snapshotted, with the size and duration",
		waitJS(hasActive("i1"), 100*time.Second),
		waitJS(`(() => { const done = `+snapshotted+`; const want = `+storeTasks+`; return want.length > 0 && want.every(t => done.has(t)); })()`, 100*time.Second),
		eval(storeTasks, &tasks),
		eval(`document.querySelector('[data-testid="events-list"] [data-kind="snapshot-taken"]').textContent`, &taken))
	if !snapshotTakenText.MatchString(taken) {
		t.Errorf("a snapshot-taken event reads %q, want its size, files, offset and duration", taken)
	}

	var installed bool
	b.step("press crash + wipe disk on i1",
		eval(watchRestoresJS("i1"), &installed),
		chromedp.WaitEnabled(tid("crash-wipe-i1")),
		chromedp.Click(tid("crash-wipe-i1")))
	// Each task's first restore is the one after the wipe; a later
	// rebalance may restore a store's tail again from its own disk.
	const firstRestores = `(() => { const first = {};
		for (const li of Array.from(document.querySelectorAll('[data-testid="events-list"] [data-kind="restore-finished"]')).reverse()) {
			const task = li.querySelector('.lv-where').textContent.replace(/^.*task /, '');
			if (!(task in first)) first[task] = li.textContent;
		}
		return first; })()`
	var restored map[string]string
	b.stepWithin(2*time.Minute, "see i1 back, each store restored from its snapshot",
		waitJS(fmt.Sprintf(`Object.keys(%s).length >= %d`, firstRestores, len(tasks)), 110*time.Second),
		waitJS(hasActive("i1"), 60*time.Second),
		eval(firstRestores, &restored))
	saveSuccessShot(t, b, "live-snapshot-restore")
	for task, text := range restored {
		if !restoredFromSnapshot.MatchString(text) {
			t.Errorf("task %s's restore reads %q, want it from a snapshot: its age, size and load time, then the changelog records", task, text)
		}
	}
	var seen map[string][]restoreStep
	b.step("read what the restore bars showed", eval(`window.braidRestores.stop()`, &seen))
	for bar, steps := range seen {
		for _, s := range steps {
			t.Logf("%s: %s", bar, s.Text)
			if !snapshotBarText.MatchString(s.Text) && !restoreText.MatchString(s.Text) {
				t.Errorf("%s reads %q, want where the state came from, the records and records/s", bar, s.Text)
			}
		}
	}
}

// snapshotTakenText is a snapshot-taken event's row: "... snapshot <id>
// of <store> of task 0_1 on i1: 12.3 kB in 4 file(s) up to changelog
// offset 812, in 35ms".
var snapshotTakenText = regexp.MustCompile(`snapshot \S+ of \S+ of task \d+_\d+ on i1: [0-9.]+ [kMG]?B in \d+ file\(s\) up to changelog offset \d+, in \S+`)

// restoredFromSnapshot is a restore-finished row of a restore from a
// snapshot: "restored <store> of task 0_1 on i1: from snapshot <id> (4s
// old, 12.3 kB loaded in 3ms), then 17 changelog records in 20ms".
var restoredFromSnapshot = regexp.MustCompile(`restored \S+ of task \d+_\d+ on i1: from snapshot \S+ \(\S+ old, [0-9.]+ [kMG]?B loaded in \S+\), then \d+ changelog records in `)

// snapshotBarText is the text of a restore bar of a restore from
// snapshots: "snapshot 4.0 s old, 12.3 kB in 3 ms, then 12/17 records of
// changelog · 850 rec/s · 6 ms left".
var snapshotBarText = regexp.MustCompile(`^snapshot .+ old, [0-9.]+ [kMG]?B in .+, then [0-9.]+[kM]?/[0-9.]+[kM]? records of changelog · [0-9.]+k? rec/s( · .+ left)?$`)

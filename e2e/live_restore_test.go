package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// restoreKeys is how many customers the state demo counts in
// TestLiveCrashWipeShowsTheRestore: a changelog a full restore takes long
// enough over that the live page, which gets a restore-progress event at
// most every 100 ms, draws its bar more than once. At 300,000 the restore
// (1.4M records/s measured) took 177 ms and the bar was seen once or not at
// all; at 1,000,000 it was seen 7 and 8 times.
const restoreKeys = 1_000_000

// watchRestoresJS installs in the page a watch over the restore bars of
// instance's task cards (restore-<instance>-<task>): a MutationObserver
// keeps, for each bar, every count it showed (data-restored), with its
// total and text. window.braidRestores.seen holds them.
func watchRestoresJS(instance string) string {
	return fmt.Sprintf(`(() => {
  const seen = {};
  const look = () => {
    for (const bar of document.querySelectorAll('[data-testid^="restore-%s-"]')) {
      if (bar.hidden) continue;
      const list = (seen[bar.dataset.testid] = seen[bar.dataset.testid] || []);
      const n = Number(bar.dataset.restored);
      if (!list.length || list[list.length - 1].restored !== n) {
        list.push({restored: n, total: Number(bar.dataset.total), text: bar.querySelector('.lv-bar-text').textContent});
      }
    }
  };
  const obs = new MutationObserver(look);
  obs.observe(document.querySelector('[data-testid="instance-list"]'), {subtree: true, childList: true, attributes: true, characterData: true});
  window.braidRestores = {seen, stop: () => { look(); obs.disconnect(); return seen; }};
  return true;
})()`, instance)
}

// restoreStep is one count a restore bar showed.
type restoreStep struct {
	Restored, Total int64
	Text            string
}

// TestLiveCrashWipeShowsTheRestore runs the state demo (a count per
// customer on one instance, one task), presses "crash + wipe disk" on its instance
// and watches the restore on the live page: a restore bar appears on a
// task card, its count rises, it says records/s and the time left, and
// the restore completes: every task runs again, the bars are gone, and
// the timeline says instance-crash-wiped and restore-finished.
func TestLiveCrashWipeShowsTheRestore(t *testing.T) {
	url := startServeWith(t, append(serveBrokerArgs(t), "--state-demo-keys", fmt.Sprint(restoreKeys))...)
	const id = "customer-totals"
	waitDeployment(t, url, id)
	b := newBrowser(t)
	last := fmt.Sprintf("customer-%d", restoreKeys-1)
	b.stepWithin(3*time.Minute, "open the live view and see every customer counted",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="connection"][data-state="open"]`)),
		waitJS(`(() => { const r = document.querySelector('[data-testid="instance-instance-1"]'); return r && r.dataset.state === "running" &&
			r.querySelectorAll('[data-role="active"][data-state="running"]').length === 1; })()`, 60*time.Second),
		waitJS(fmt.Sprintf(`fetch('/api/deployments/%s/query?store=orders-per-customer&key=%s').then(r => r.json()).then(r => r.found === true)`, id, last), 150*time.Second))

	var installed bool
	b.step("press crash + wipe disk",
		eval(watchRestoresJS("instance-1"), &installed),
		chromedp.WaitEnabled(tid("crash-wipe-instance-1")),
		chromedp.Click(tid("crash-wipe-instance-1")))
	b.stepWithin(time.Minute, "see a restore bar appear and its count rise",
		waitJS(`Object.values(window.braidRestores.seen).some(l => l.length >= 2 && l[l.length - 1].restored > l[0].restored)`, 50*time.Second))
	saveSuccessShot(t, b, "live-restore")
	b.stepWithin(time.Minute, "see the restore complete",
		waitJS(`(() => { const r = document.querySelector('[data-testid="instance-instance-1"]');
			return r.dataset.state === "running" && r.querySelectorAll('[data-role="active"][data-state="running"]').length === 1 &&
				!Array.from(r.querySelectorAll('[data-testid^="restore-"]')).some(b => !b.hidden); })()`, 50*time.Second),
		waitJS(`!!document.querySelector('[data-testid="events-list"] [data-kind="instance-crash-wiped"]') &&
			document.querySelectorAll('[data-testid="events-list"] [data-kind="restore-finished"]').length >= 1`, 20*time.Second))
	var seen map[string][]restoreStep
	var restored int64
	b.step("read what the bars showed and the restores' records",
		eval(`window.braidRestores.stop()`, &seen),
		eval(`Array.from(document.querySelectorAll('[data-testid="events-list"] [data-kind="restore-finished"]')).reduce((n, li) => n + JSON.parse(li.title).restored, 0)`, &restored))
	left := false
	for bar, steps := range seen {
		t.Logf("%s: %d counts, %+v ... %+v", bar, len(steps), steps[0], steps[len(steps)-1])
		for i, s := range steps {
			if s.Total <= 0 || s.Restored > s.Total || i > 0 && s.Restored < steps[i-1].Restored {
				t.Errorf("%s showed %+v after %+v: want counts rising within the total", bar, s, steps[max(0, i-1)])
			}
			if !restoreText.MatchString(s.Text) {
				t.Errorf("%s reads %q, want changelog: restored/total records and records/s", bar, s.Text)
			}
			left = left || strings.HasSuffix(s.Text, " left")
		}
	}
	if !left {
		t.Error("no restore bar said the time left")
	}
	// Records of customers the generator wrote since add up to more.
	if restored < restoreKeys {
		t.Errorf("the restores ended with %d records restored, want the whole changelog, %d or more: the wiped instance restores every row", restored, restoreKeys)
	}
}

// restoreText is the text of a restore bar of a restore from the
// changelog: "changelog: 12.3k/75.0k records · 402k rec/s · 0.2 s left".
var restoreText = regexp.MustCompile(`^changelog: [0-9.]+[kM]?/[0-9.]+[kM]? records · [0-9.]+k? rec/s( · .+ left)?$`)

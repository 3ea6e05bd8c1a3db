package e2e

import (
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestLiveRemoteStoreBrowser queries the stores of an application the
// server does not run: two `braid run --advertise` processes of the demo
// design, with a standby each and a query token shared with the server
// through $BRAID_QUERY_TOKEN. The live page shows its store browser, which
// finds a key's windows (braid gen's customers are key-0 .. key-9) through
// the processes' store servers; after the process holding them is killed
// with SIGKILL, the same lookup is answered by the surviving instance
// (from its standby, marked stale, until the group moves the task to it).
func TestLiveRemoteStoreBrowser(t *testing.T) {
	t.Setenv("BRAID_QUERY_TOKEN", "e2e-query-token")
	_, self, _, _ := runtime.Caller(0)
	design := filepath.Join(filepath.Dir(filepath.Dir(self)), "cmd", "braid", "orders-demo.json")
	broker := startBrokerProc(t)
	url := startServeWith(t, "--brokers", broker.addr, "--no-demo")
	startBraid(t, "produced", "gen", "--topic", "orders", "--brokers", broker.addr)
	runs := map[string]*runProc{}
	for _, id := range []string{"i1", "i2"} {
		runs[id] = startBraid(t, "serving store lookups", "run", design, "--brokers", broker.addr, "--instance-id", id,
			"--state-dir", filepath.Join(t.TempDir(), id), "--session-timeout", "5s", "--standbys", "1", "--commit-interval", "1s",
			"--advertise", freePort(t))
	}
	const id = "braid-orders-demo"
	b := newBrowser(t)
	found := `document.querySelector('[data-testid="store-result"]').dataset.found === "true"`
	b.stepWithin(90*time.Second, "open the live page and see its store browser",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		until(`document.body.dataset.remote === "true"`),
		waitJS(`document.body.dataset.queryable === "true"`, 80*time.Second),
		chromedp.WaitVisible(tid("store-key")))
	// Queries until the result holds: the generator's first orders take
	// a commit to reach the stores.
	queryUntil := func(cond string) chromedp.Action[chromedp.Void] {
		return waitJS(`(() => {
			const r = document.querySelector('[data-testid="store-result"]')
			if (`+cond+`) return true
			const k = document.querySelector('[data-testid="store-key"]')
			k.value = 'key-1'
			document.querySelector('[data-testid="store-lookup"]').click()
			return false
		})()`, 80*time.Second)
	}
	var owner string
	b.stepWithin(90*time.Second, "query key-1's windows through the processes' store servers",
		queryUntil(found),
		eval(`document.querySelector('[data-testid="store-result"]').dataset.instance`, &owner))
	survivor := map[string]string{"i1": "i2", "i2": "i1"}[owner]
	if survivor == "" {
		t.Fatalf("key-1 answered by %q, want i1 or i2", owner)
	}
	if err := runs[owner].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var stale string
	b.stepWithin(90*time.Second, "see key-1 answered by the surviving instance "+survivor,
		queryUntil(found+` && r.dataset.instance === "`+survivor+`"`),
		eval(`document.querySelector('[data-testid="store-result"]').dataset.stale + ' ' + ((document.querySelector('[data-testid="store-stale"]') || {}).textContent || '')`, &stale))
	t.Logf("after killing %s's process, %s answered (stale, marker): %s", owner, survivor, stale)
	saveSuccessShot(t, b, "live-remote-store-browser")
}

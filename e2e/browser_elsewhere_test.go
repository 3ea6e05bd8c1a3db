package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDesignsListsApplicationsRunElsewhere: two `braid run` processes of
// the demo design, started beside `braid serve` (which runs nothing of
// its own), report through the telemetry topic; the designs page lists
// their application under "Running elsewhere", running, with both
// processes reporting, and its link opens the application's live page.
func TestDesignsListsApplicationsRunElsewhere(t *testing.T) {
	args := serveBrokerArgs(t)
	brokers := args[1]
	url := startServeWith(t, append(args, "--no-demo")...)
	startBraid(t, loopback, "produced", "gen", "--topic", "orders", "--brokers", brokers)
	design := filepath.Join("..", "cmd", "braid", "orders-demo.json")
	for _, p := range []string{"p1", "p2"} {
		startBraid(t, loopback, "stop with Ctrl-C", "run", design, "--brokers", brokers, "--instance-id", p,
			"--state-dir", filepath.Join(t.TempDir(), p))
	}
	const app = "braid-orders-demo" // the demo design's application id

	b := newBrowser(t)
	row := `document.querySelector('[data-testid="elsewhere-` + app + `"]')`
	proc := func(p string) string {
		return `document.querySelector('[data-testid="elsewhere-process-` + app + `-` + p + `"]')`
	}
	b.stepWithin(60*time.Second, "see the application under Running elsewhere, running, both processes reporting",
		chromedp.Navigate(url+"/"),
		waitJS(`!document.querySelector('[data-testid="running-elsewhere"]').hidden && !!`+row+` && `+row+`.dataset.state === 'running'`+
			` && !!`+proc("p1")+` && `+proc("p1")+`.dataset.state === 'reporting'`+
			` && !!`+proc("p2")+` && `+proc("p2")+`.dataset.state === 'reporting'`+
			// Each process with its instance, and that instance's state.
			` && `+proc("p1")+`.textContent === 'p1 reporting: p1 running'`+
			` && `+proc("p2")+`.textContent === 'p2 reporting: p2 running'`, 50*time.Second))
	var text, href string
	b.step("read the row",
		eval(row+`.textContent`, &text),
		eval(`document.querySelector('[data-testid="elsewhere-link-`+app+`"]').getAttribute('href')`, &href))
	if href != "/live/"+app {
		t.Errorf("the application links to %q, want /live/%s", href, app)
	}
	if !strings.Contains(text, app) {
		t.Errorf("the row reads %q, want it to name the application id %s", text, app)
	}
	var deployed int
	b.step("see no design marked deployed: the server deployed nothing",
		eval(`document.querySelectorAll('tr[data-deployed="true"]').length`, &deployed))
	if deployed != 0 {
		t.Errorf("%d designs marked deployed, want none", deployed)
	}
	b.stepWithin(60*time.Second, "open the link's live page and see the application's instances",
		chromedp.Navigate(url+href),
		waitJS(`document.body.dataset.remote === 'true'`+
			` && !!document.querySelector('[data-testid="instance-p1"]') && !!document.querySelector('[data-testid="instance-p2"]')`, 50*time.Second))
	saveSuccessShot(t, b, "designs-running-elsewhere")
}

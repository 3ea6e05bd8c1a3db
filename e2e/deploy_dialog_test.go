package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDeployDialogToProcesses: the editor's Deploy dialog deploys the
// demo "by processes you start": the instances field goes away, the live
// page opens at once and, with no process reporting, shows the command
// that starts one.
func TestDeployDialogToProcesses(t *testing.T) {
	url := startServeWith(t, "--broker-listen", freePort(t), "--no-demo")
	b := newBrowser(t)
	b.step("open the demo's editor and its deploy dialog",
		chromedp.Navigate(url+"/designs/orders-demo"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.Click(tid("deploy")),
		chromedp.WaitVisible(tid("deploy-dialog")))
	var hidden bool
	b.step("choose processes you start",
		chromedp.SetValue(tid("deploy-where"), "processes"),
		until(`document.querySelector('[data-testid="deploy-where"]').dispatchEvent(new Event('change', {bubbles: true}))`),
		eval(`document.querySelector('[data-testid="deploy-instances"]').closest('label').hidden || getComputedStyle(document.querySelector('[data-testid="deploy-instances"]').closest('label')).display === 'none'`, &hidden))
	if !hidden {
		t.Error("the instances field is shown for a deployment to processes you start")
	}
	var command string
	b.stepWithin(45*time.Second, "deploy and see the command that starts a process",
		chromedp.Click(tid("deploy-submit")),
		chromedp.WaitVisible(chromedp.CSS(`body.live-page[data-live-ready="true"]`)),
		chromedp.WaitVisible(tid("run-command")),
		eval(`document.querySelector('[data-testid="run-command-text"]').textContent`, &command))
	if !strings.HasPrefix(command, "braid run --deployment orders-demo --brokers 127.0.0.1:") {
		t.Errorf("the live page's command is %q, want braid run --deployment orders-demo --brokers ...", command)
	}
	var summary string
	b.step("read the summary", eval(`document.querySelector('[data-testid="deployment-summary"]').textContent`, &summary))
	if !strings.Contains(summary, "revision 1, run by processes you start") {
		t.Errorf("summary %q, want revision 1 run by processes you start", summary)
	}
}

// TestDeployDialogSnapshots: the Deploy dialog's store snapshots are off
// until checked; checked, their location shows the server's directory
// for the design as its default, a location the server cannot use is
// refused with an error naming the field, and a deploy with the default
// reaches the deployment, whose live page says where its snapshots go.
func TestDeployDialogSnapshots(t *testing.T) {
	url := startServeWith(t, "--broker-listen", freePort(t), "--no-demo")
	b := newBrowser(t)
	const locationShown = `!document.querySelector('[data-testid="deploy-snapshot-url"]').closest('label').hidden`
	var checked, shown bool
	b.step("open the demo's editor and its deploy dialog",
		chromedp.Navigate(url+"/designs/orders-demo"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.Click(tid("deploy")),
		chromedp.WaitVisible(tid("deploy-dialog")),
		eval(`document.querySelector('[data-testid="deploy-snapshots"]').checked`, &checked),
		eval(locationShown, &shown))
	if checked || shown {
		t.Errorf("snapshots checked %v and their location shown %v before asking: want both off", checked, shown)
	}
	var placeholder string
	b.stepWithin(10*time.Second, "check store snapshots and see the default location",
		chromedp.Click(tid("deploy-snapshots")),
		waitJS(locationShown+` && document.querySelector('[data-testid="deploy-snapshot-url"]').placeholder.includes('/snapshots/')`, 5*time.Second),
		eval(`document.querySelector('[data-testid="deploy-snapshot-url"]').placeholder`, &placeholder))
	if !strings.HasPrefix(placeholder, "default: file:///") || !strings.HasSuffix(placeholder, "/snapshots/braid-orders-demo") {
		t.Errorf("the location's placeholder is %q, want default: file:///<data dir>/snapshots/braid-orders-demo", placeholder)
	}
	var problem string
	b.stepWithin(20*time.Second, "type a location the server cannot use and see it refused",
		chromedp.SendKeys(tid("deploy-snapshot-url"), "http://blobs/snapshots"),
		chromedp.Click(tid("deploy-submit")),
		waitJS(`document.querySelector('[data-testid="deploy-error"]').textContent !== ''`, 15*time.Second),
		eval(`document.querySelector('[data-testid="deploy-error"]').textContent`, &problem))
	if want := `snapshotUrl: "http://blobs/snapshots": scheme "http" is not file or s3`; !strings.Contains(problem, want) {
		t.Errorf("the dialog says %q, want it to name the field: %q", problem, want)
	}
	var summary string
	b.stepWithin(45*time.Second, "clear the location, deploy, and see the live page say where snapshots go",
		until(`(document.querySelector('[data-testid="deploy-snapshot-url"]').value = '') === ''`),
		chromedp.Click(tid("deploy-submit")),
		chromedp.WaitVisible(chromedp.CSS(`body.live-page[data-live-ready="true"]`)),
		waitJS(`document.querySelector('[data-testid="deployment-summary"]').textContent.includes('store snapshots in file:///')`, 30*time.Second),
		eval(`document.querySelector('[data-testid="deployment-summary"]').textContent`, &summary))
	if !strings.Contains(summary, "/snapshots/braid-orders-demo") {
		t.Errorf("the summary %q does not name the default snapshot directory", summary)
	}
}

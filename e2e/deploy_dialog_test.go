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

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGeneratorPanelExternalProducer feeds the demo's source topic from
// a producer of the test's own (the demo's generator stopped), records of
// another shape than the demo's generator writes, and opens the live
// page: the generator panel lists the topic's latest records as from
// another producer, proposes a template of their shape (and the form
// takes it, not the default one), and says plainly that another producer
// feeds the topic. Start is refused until the confirmation box is ticked,
// then the generator runs.
func TestGeneratorPanelExternalProducer(t *testing.T) {
	url, brokers := serveOnReachableBroker(t)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	// The demo's generator starts after its deployment shows.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var info struct{ Generators []struct{ Topic string } }
		resp, err := http.Get(url + "/api/deployments/" + id)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&info)
			resp.Body.Close()
		}
		if err == nil && len(info.Generators) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo's generator did not start within 30 s: %v %+v", err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}
	req, err := http.NewRequest(http.MethodDelete, url+"/api/deployments/"+id+"/generators/orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("stopping the demo's generator: %s", resp.Status)
	}

	// The outside producer: 10 records on each partition, the newest of
	// every one.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().UnixMilli()
	var recs []*kgo.Record
	for i := range 10 * demoPartitions {
		shop := fmt.Sprintf("shop-%d", i%4)
		channel := []string{"web", "store"}[i%2]
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % demoPartitions), Key: []byte(shop),
			Timestamp: time.UnixMilli(now + int64(i)),
			Value:     fmt.Appendf(nil, `{"customer": %q, "amount": %d.5, "channel": %q, "ts": %d}`, shop, 20+i, channel, now+int64(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing the outside records: %v", err)
	}

	b := newBrowser(t)
	const form = `document.querySelector('[data-testid="generator-orders"]')`
	b.step("open the live view and read the panel's sample",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		waitJS(`(() => { const s = document.querySelector('[data-testid="generator-sample-orders"]'); return s && s.dataset.records === "40"; })()`, 20*time.Second),
		chromedp.ScrollIntoView(tid("generator-orders")))
	var panel struct {
		External string   `json:"external"`
		Rows     []string `json:"rows"`
		Warning  string   `json:"warning"`
		Shown    bool     `json:"shown"`
		Proposal string   `json:"proposal"`
		Template string   `json:"template"`
		Prefix   string   `json:"prefix"`
		Keys     string   `json:"keys"`
	}
	b.step("read the panel", eval(`(() => {
	  const q = (id) => document.querySelector('[data-testid="' + id + '"]');
	  const w = q('generator-external-orders');
	  return {
	    external: q('generator-sample-orders').dataset.external,
	    rows: Array.from(q('generator-sample-orders').querySelectorAll('tbody tr')).map(r => r.textContent),
	    warning: w.textContent, shown: !w.hidden && w.getBoundingClientRect().height > 0,
	    proposal: q('generator-proposal-orders').textContent,
	    template: q('generator-template-orders').value,
	    prefix: `+form+`.querySelector('[name="keyPrefix"]').value,
	    keys: `+form+`.querySelector('[name="keys"]').value,
	  };
	})()`, &panel))
	if panel.External != "40" || len(panel.Rows) != 5 {
		t.Errorf("the sample shows %d rows and %s external records, want 5 rows of 40 external", len(panel.Rows), panel.External)
	}
	for _, r := range panel.Rows {
		if !strings.Contains(r, "shop-") || !strings.Contains(r, `"channel"`) || !strings.HasSuffix(r, "another producer") {
			t.Errorf("sample row %q, want an outside record from another producer", r)
		}
	}
	if !panel.Shown || !strings.Contains(panel.Warning, "Another producer feeds orders: 40 of its latest 40 records were not written by Braid's generator") {
		t.Errorf("the warning (shown %v): %q", panel.Shown, panel.Warning)
	}
	for _, line := range []string{"amount = randfloat(20.5, 59.5)", "channel = choice(store, web)", "customer = key", "ts = timestamp"} {
		if !strings.Contains(panel.Proposal, line) || !strings.Contains(panel.Template, line) {
			t.Errorf("%q missing from the proposal %q or the form's template %q", line, panel.Proposal, panel.Template)
		}
	}
	if strings.Contains(panel.Template, "random(1, 100)") || panel.Prefix != "shop" || panel.Keys != "4" {
		t.Errorf("the form holds template %q, keys %s with prefix %q; want the proposal's, 4 keys shop-N", panel.Template, panel.Keys, panel.Prefix)
	}
	saveSuccessShot(t, b, "generator-external-producer")

	b.step("Start without confirming is refused",
		chromedp.Click(tid("generator-start-orders")),
		waitJS(`document.querySelector('[data-testid="live-status"]').textContent.includes('is fed by another producer')`, 10*time.Second))
	var running string
	b.step("still stopped", eval(form+`.dataset.running`, &running))
	if running != "false" {
		t.Errorf("the generator runs (data-running %q) though Start was not confirmed", running)
	}
	b.step("confirm and start",
		chromedp.Click(tid("generator-confirm-orders")),
		chromedp.Click(tid("generator-start-orders")),
		waitJS(form+`.dataset.running === "true"`, 10*time.Second))
}

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// postJSON posts body to url+path and fails the test unless the answer
// has status want.
func postJSON(t *testing.T, url, path string, body any, want int) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s %s, want %d", path, resp.Status, msg, want)
	}
}

// TestJoinPortLabelsAndWindowStores: a stream-stream join designed
// through the API (window 5s, grace 2s) shows its "left" and "right"
// port labels outside its node, over none of its text; deployed and fed
// on both sides, its live page's windows panel names both of the join's
// buffers (its windowed stores), each with a lane per task, and the store
// browser lists them by name.
func TestJoinPortLabelsAndWindowStores(t *testing.T) {
	url := startServe(t)
	node := func(id, kind string, params map[string]any, x, y float64) map[string]any {
		return map[string]any{"id": id, "kind": kind, "params": params, "position": map[string]any{"x": x, "y": y}}
	}
	edge := func(from, to, port string) map[string]any {
		return map[string]any{"from": from, "fromPort": "out", "to": to, "toPort": port}
	}
	id := createDesign(t, url, map[string]any{"name": "paid orders", "version": 1, "nodes": []any{
		node("orders", "source-stream", map[string]any{"topic": "join-orders", "valueSerde": "json"}, 40, 40),
		node("payments", "source-stream", map[string]any{"topic": "join-payments", "valueSerde": "json"}, 40, 200),
		node("paid", "stream-join", map[string]any{"type": "inner", "window": "5s", "grace": "2s", "joiner": "{order: left, payment: right}"}, 320, 120),
		node("out", "sink", map[string]any{"topic": "join-paid", "valueSerde": "json"}, 600, 120),
	}, "edges": []any{edge("orders", "paid", "left"), edge("payments", "paid", "right"), edge("paid", "out", "in")}})

	b := newBrowser(t)
	b.step("open the design",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.WaitVisible(tid("node-paid")))
	// overlaps lists, for the join node, each port label's text and what
	// of the node it overlaps: its box, or one of its texts.
	var overlaps []string
	var labels []string
	b.step("measure the join's port labels and its text",
		eval(`(() => {
  const node = document.querySelector('[data-testid="node-paid"]')
  const box = (el) => el.getBoundingClientRect()
  const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom
  const body = box(node.querySelector('.be-body'))
  const texts = Array.from(node.querySelectorAll('.be-title, .be-label, .be-detail')).filter((e) => e.textContent.trim())
  const out = []
  for (const l of node.querySelectorAll('.x6-port-label')) {
    if (!l.textContent.trim() || box(l).width === 0) continue
    const lb = box(l)
    if (meets(lb, body)) out.push(l.textContent + ' over the node box')
    for (const t of texts) if (meets(lb, box(t))) out.push(l.textContent + ' over "' + t.textContent + '"')
  }
  return out
})()`, &overlaps),
		eval(`Array.from(document.querySelectorAll('[data-testid="node-paid"] .x6-port-label')).filter((l) => l.getBoundingClientRect().width > 0).map((l) => l.textContent.trim()).filter(Boolean).sort()`, &labels))
	if strings.Join(labels, ",") != "left,right" {
		t.Errorf("the join's port labels read %q, want left and right", labels)
	}
	for _, o := range overlaps {
		t.Errorf("port label %s", o)
	}

	postJSON(t, url, "/api/deployments", map[string]any{"design": id, "instances": 1}, http.StatusCreated)
	for _, topic := range []string{"join-orders", "join-payments"} {
		postJSON(t, url, "/api/deployments/"+id+"/generators", map[string]any{"topic": topic, "rate": 20, "keys": 40,
			"template": map[string]string{"amount": "random(1, 100)"}}, http.StatusCreated)
	}
	resp, err := http.Get(url + "/api/deployments/" + id)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Stores []struct {
			Name string `json:"name"`
			Join bool   `json:"join"`
		} `json:"stores"`
	}
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var joins []string
	for _, s := range info.Stores {
		if s.Join {
			joins = append(joins, s.Name)
		}
	}
	if len(joins) != 2 || !strings.Contains(joins[0], "JOIN") || !strings.Contains(joins[1], "JOIN") {
		t.Fatalf("the deployment's join buffers are %q, want the join's two stores", joins)
	}
	lanes := `document.querySelectorAll('[data-testid="lanes"] [data-join="true"][data-store="%s"]')`
	cond := `document.querySelector('[data-testid="stores"] select') !== null`
	for _, s := range joins {
		// One lane per task of the join (4 partitions), with stream time,
		// and the store in the browser's list.
		cond += ` && Array.from(` + strings.Replace(lanes, "%s", s, 1) + `).filter((l) => Number(l.dataset.streamTime) > 0 && l.textContent.includes('` + s + `')).length === 4`
		cond += ` && Array.from(document.querySelectorAll('[data-testid="stores"] option')).some((o) => o.value === '` + s + `')`
	}
	b.stepWithin(60*time.Second, "see the windows panel name both join buffers, a lane per task moving with stream time",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		waitJS(cond, 50*time.Second))
	var empty bool
	b.step("read whether the panel says no windowed store is open",
		eval(`Array.from(document.querySelectorAll('[data-testid="lanes"] p')).some((p) => !p.hidden && p.textContent.includes('No windowed store'))`, &empty))
	if empty {
		t.Error(`the windows panel says "No windowed store is open yet" beside the join's lanes`)
	}
	b.step("show the windows panel", chromedp.ScrollIntoView(tid("lanes")))
	saveSuccessShot(t, b, "join-live")
}

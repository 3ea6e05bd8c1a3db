package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// createDesign stores a design through the API and returns its id.
func createDesign(t *testing.T, url string, design map[string]any) string {
	t.Helper()
	body, err := json.Marshal(design)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+"/api/designs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct {
		Design struct{ ID string } `json:"design"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating the design: status %d, %v", resp.StatusCode, err)
	}
	return created.Design.ID
}

// TestEditorJoins adds a stream-stream join from the palette: its ports
// take streams only (a table dropped on one makes no edge), it asks for
// its window until one is typed, and the compiled topology has the join.
func TestEditorJoins(t *testing.T) {
	url := startServe(t)
	node := func(id, kind string, params map[string]any, x, y float64) map[string]any {
		return map[string]any{"id": id, "kind": kind, "params": params, "position": map[string]any{"x": x, "y": y}}
	}
	id := createDesign(t, url, map[string]any{"name": "joins", "version": 1, "nodes": []any{
		node("orders", "source-stream", map[string]any{"topic": "orders"}, 40, 40),
		node("payments", "source-stream", map[string]any{"topic": "payments"}, 40, 200),
		node("customers", "source-table", map[string]any{"topic": "customers"}, 40, 360),
		node("out", "sink", map[string]any{"topic": "paid"}, 700, 120),
	}, "edges": []any{}})
	b := newBrowser(t)

	b.step("open the design",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.WaitVisible(tid("node-customers")))

	b.step("find the joins in the palette",
		chromedp.SendKeys(tid("palette-search"), "join"),
		chromedp.WaitVisible(tid("palette-stream-join")),
		chromedp.WaitVisible(tid("palette-table-join")))
	join := dropFromPalette(t, b, "stream-join", 0.45, 0.35)

	var edges int
	b.step("a table dropped on the left port makes no edge",
		dragTestID("port-customers-out-out", "port-"+join+"-in-left"),
		chromedp.Sleep(300*time.Millisecond),
		eval(`document.querySelectorAll('[data-testid="edge-customers-out-`+join+`-left"]').length`, &edges))
	if edges != 0 {
		t.Fatalf("the join's left port took a table")
	}
	b.step("wire orders, payments and the sink",
		dragTestID("port-orders-out-out", "port-"+join+"-in-left"),
		chromedp.WaitVisible(tid("edge-orders-out-"+join+"-left")),
		dragTestID("port-payments-out-out", "port-"+join+"-in-right"),
		chromedp.WaitVisible(tid("edge-payments-out-"+join+"-right")),
		dragTestID("port-"+join+"-out-out", "port-out-in-in"),
		chromedp.WaitVisible(tid("edge-"+join+"-out-out-in")))

	b.step("the join asks for its window",
		until(`document.querySelector('[data-testid="node-`+join+`"]').dataset.problem === "true"`),
		until(`Array.from(document.querySelectorAll('[data-testid^="problem-"]')).some(e => e.textContent.includes("window"))`))
	b.step("type a window",
		chromedp.Click(tid("node-"+join)),
		chromedp.WaitVisible(tid("param-window")),
		chromedp.SendKeys(tid("param-window"), "5m"),
		until(`document.querySelector('[data-testid="node-`+join+`"]').dataset.problem !== "true"`))
	b.step("remove the unconnected table source",
		chromedp.Click(tid("node-customers")),
		chromedp.KeyEvent("\b"),
		chromedp.WaitNotPresent(tid("node-customers")),
		until(`document.querySelectorAll('[data-testid^="problem-"]').length === 0`))

	b.step("compile and find the join's processors",
		chromedp.Click(tid("compile")),
		chromedp.WaitVisible(tid("describe")),
		until(`document.querySelector('[data-testid="describe"]').textContent.includes("KSTREAM-JOINTHIS-")`),
		until(`document.querySelector('[data-testid="describe"]').textContent.includes("KSTREAM-WINDOWED-")`))
}

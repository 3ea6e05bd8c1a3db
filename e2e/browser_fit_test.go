package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The tests of issue 37, what a new user hits.

// windowSizes are the windows the layout tests run at.
var windowSizes = []struct{ W, H int }{{1600, 1000}, {1280, 800}}

// outsideJS is JavaScript listing the elements of items (a selector, each
// named by its data-testid or data-cell-id) whose box is not inside the
// box of the element of box, at least margin px from its edges; with
// avoid (a selector, or ""), also those that overlap that element's box.
func outsideJS(items, box string, margin float64, avoid string) string {
	return fmt.Sprintf(`(() => {
  const box = document.querySelector(%q);
  if (!box) return ['no ' + %q];
  const b = box.getBoundingClientRect(), m = %v;
  const av = %q ? document.querySelector(%q) : null;
  const a = av && av.offsetParent ? av.getBoundingClientRect() : null;
  const out = [];
  const els = document.querySelectorAll(%q);
  if (els.length === 0) return ['no ' + %q];
  for (const e of els) {
    const r = e.getBoundingClientRect();
    const name = e.dataset.testid || e.getAttribute('data-cell-id') || e.tagName;
    if (r.left < b.left + m || r.right > b.right - m || r.top < b.top + m || r.bottom > b.bottom - m) {
      out.push(name + ' [' + [r.left, r.top, r.right, r.bottom].map(Math.round) + '] not inside ' + %q + ' [' + [b.left, b.top, b.right, b.bottom].map(Math.round) + '] by ' + m + ' px');
    } else if (a && r.left < a.right && a.left < r.right && r.top < a.bottom && a.top < r.bottom) {
      out.push(name + ' under ' + %q);
    }
  }
  return out;
})()`, box, box, margin, avoid, avoid, items, items, box, avoid)
}

// expectNone waits up to timeout for js, a list, to be empty, and then
// fails the test with what it lists (what:, each item).
func expectNone(t *testing.T, b *browser, what, js string, timeout time.Duration) {
	t.Helper()
	var out []string
	b.step("check: "+what,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			// The condition may never hold: the list says why.
			_, _ = chromedp.Poll[chromedp.Void](`(`+js+`).length === 0`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout))(ctx, tg)
			return nil
		}),
		eval(js, &out))
	for _, s := range out {
		t.Errorf("%s: %s", what, s)
	}
}

const (
	canvasNodes  = `[data-testid="canvas"] [data-testid^="node-"]`
	minimapNodes = `[data-testid="minimap"] .x6-node`
	minimapView  = `[data-testid="minimap"] .x6-widget-minimap-viewport`
	graphZoom    = `window.braidEditor.canvas.graph.zoom()`
)

// TestEditorFitShowsEveryNode opens the demo at 1600x1000 and 1280x800:
// the editor fits it showing every node (inside the canvas with a
// margin, none under the minimap), and so does Fit after zooming in; the
// minimap shows every node, and after Fit its viewport box holds them all.
// The canvas says the zoom it is at. A design as tall as it is wide, which
// fills the canvas, is fitted clear of the minimap over the canvas's
// corner.
func TestEditorFitShowsEveryNode(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	var nodes []map[string]any
	for row := range 5 {
		for col := range 4 {
			nodes = append(nodes, map[string]any{"id": fmt.Sprintf("n%d%d", row, col), "kind": "peek", "position": map[string]any{"x": col * 220, "y": row * 150}})
		}
	}
	grid := createDesign(t, url, map[string]any{"name": "grid", "version": 1, "nodes": nodes, "edges": []any{}})
	for _, size := range windowSizes {
		t.Run(fmt.Sprintf("%dx%d", size.W, size.H), func(t *testing.T) {
			b := newBrowserSized(t, size.W, size.H)
			var opened, zoomed, fitted, shown float64
			b.step("open the demo and wait for its fit",
				chromedp.Navigate(url+"/designs/"+id),
				chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
				until(`document.querySelector('[data-testid="canvas"]').dataset.zoom !== undefined`),
				eval(graphZoom, &opened))
			expectNone(t, b, "nodes of the opened demo", outsideJS(canvasNodes, `[data-testid="canvas"]`, 10, `[data-testid="minimap"]`), 5*time.Second)

			b.step("zoom in",
				chromedp.Click(tid("zoom-in")),
				chromedp.Click(tid("zoom-in")),
				chromedp.Click(tid("zoom-in")),
				until(fmt.Sprintf(`%s > %v`, graphZoom, opened+0.25)),
				eval(graphZoom, &zoomed))
			b.step("fit",
				chromedp.Click(tid("fit")),
				until(fmt.Sprintf(`%s < %v`, graphZoom, zoomed-0.01)),
				eval(graphZoom, &fitted),
				eval(`Number(document.querySelector('[data-testid="canvas"]').dataset.zoom)`, &shown))
			t.Logf("zoom %.3f on opening, %.3f after Fit", opened, fitted)
			if diff := shown - fitted; diff > 0.001 || diff < -0.001 {
				t.Errorf("the canvas's data-zoom is %v, the graph's zoom %v", shown, fitted)
			}
			expectNone(t, b, "nodes after Fit", outsideJS(canvasNodes, `[data-testid="canvas"]`, 10, `[data-testid="minimap"]`), 5*time.Second)
			expectNone(t, b, "nodes in the minimap", outsideJS(minimapNodes, `[data-testid="minimap"]`, 0, ""), 5*time.Second)
			expectNone(t, b, "nodes in the minimap's viewport box after Fit", outsideJS(minimapNodes, minimapView, -1, ""), 5*time.Second)
			var n int
			b.step("count the minimap's nodes", eval(`document.querySelectorAll('`+minimapNodes+`').length`, &n))
			if n != 7 {
				t.Errorf("the minimap draws %d nodes, the demo has 7", n)
			}

			b.step("open a design of 5 rows of 4 nodes",
				chromedp.Navigate(url+"/designs/"+grid),
				chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
				until(`document.querySelector('[data-testid="canvas"]').dataset.zoom !== undefined`))
			expectNone(t, b, "nodes of the opened grid", outsideJS(canvasNodes, `[data-testid="canvas"]`, 10, `[data-testid="minimap"]`), 5*time.Second)
		})
	}
}

package e2e

import (
	"context"
	"fmt"
	"strings"
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

// TestPaletteDoubleClickPlacesApart double-clicks kinds in the palette:
// each new node goes to a free place in view, none overlapping another
// node (the demo's or a new one), inside the canvas and clear of the
// minimap.
func TestPaletteDoubleClickPlacesApart(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	b := newBrowser(t)
	b.step("open the demo",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		until(`document.querySelector('[data-testid="canvas"]').dataset.zoom !== undefined`))
	var before []string
	b.step("list the nodes", eval(nodeIDs, &before))
	kinds := []string{"filter", "map", "peek", "filter", "map-values", "source-stream", "peek"}
	for i, kind := range kinds {
		b.step(fmt.Sprintf("double-click %s in the palette", kind),
			chromedp.DoubleClick(tid("palette-"+kind)),
			until(fmt.Sprintf(`%s.length === %d`, nodeIDs, len(before)+i+1)))
	}
	var overlapping []string
	b.step("find overlapping nodes",
		eval(`(() => { `+overlaps+`
		  const nodes = Array.from(document.querySelectorAll('`+canvasNodes+` .be-body')).map(e => [e.closest('[data-testid^="node-"]').dataset.testid, e.getBoundingClientRect()]);
		  const out = [];
		  for (let i = 0; i < nodes.length; i++) for (let j = i + 1; j < nodes.length; j++) if (overlap(nodes[i][1], nodes[j][1])) out.push(nodes[i][0] + ' overlaps ' + nodes[j][0]);
		  return out })()`, &overlapping))
	for _, s := range overlapping {
		t.Error(s)
	}
	var added []string
	b.step("list the new nodes", eval(nodeIDs, &added))
	var fresh []string
	for _, n := range added {
		if !contains(before, n) {
			fresh = append(fresh, `[data-testid="node-`+n+`"]`)
		}
	}
	if len(fresh) != len(kinds) {
		t.Fatalf("%d new nodes (%v), want %d", len(fresh), fresh, len(kinds))
	}
	expectNone(t, b, "new nodes in view", outsideJS(`[data-testid="canvas"] :is(`+strings.Join(fresh, ", ")+`)`, `[data-testid="canvas"]`, 0, `[data-testid="minimap"]`), time.Second)
}

// TestExpressionErrorShownOnce gets the demo's filter's predicate wrong:
// the properties panel says what is wrong once, at the expression, while
// the problems list lists it and the node is marked.
func TestExpressionErrorShownOnce(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	b := newBrowser(t)
	var properties string
	var listed int
	b.step("open the demo and break the filter's predicate",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.Click(tid("node-filter")),
		chromedp.WaitVisible(tid("param-predicate")),
		chromedp.SendKeys(tid("param-predicate"), " <"),
		until(`document.querySelector('[data-testid="expr-status-predicate"]').dataset.ok === "false"`),
		until(`document.querySelector('[data-testid="node-filter"]').dataset.problem === "true"`),
		until(`document.querySelector('[data-testid="problems-count"]').textContent === "1"`),
		eval(`document.querySelector('[data-testid="properties"]').innerText`, &properties),
		eval(`document.querySelectorAll('[data-testid="problems"] [data-testid^="problem-"]').length`, &listed))
	if n := strings.Count(properties, "unexpected token"); n != 1 {
		t.Errorf("the properties panel says %d times what is wrong with the predicate, want once:\n%s", n, properties)
	}
	if listed != 1 {
		t.Errorf("the problems list has %d entries, want the predicate's", listed)
	}
}

// failoverTableJS lists the failover table's headers and cells that are
// not inside its panel (or, with viewport, the window), and says so when
// the table scrolls sideways.
func failoverTableJS(viewport bool) string {
	return fmt.Sprintf(`(() => {
  const panel = document.querySelector('[data-testid="failovers"]');
  const cs = getComputedStyle(panel), p = panel.getBoundingClientRect();
  const left = p.left + parseFloat(cs.borderLeftWidth), right = p.right - parseFloat(cs.borderRightWidth);
  const out = [];
  for (const e of panel.querySelectorAll('.lv-table-wrap')) if (e.scrollWidth > e.clientWidth) out.push('the table scrolls sideways: ' + e.scrollWidth + ' px in ' + e.clientWidth);
  const cells = panel.querySelectorAll('[data-testid="failover-table"] th, [data-testid="failover-table"] tbody td');
  if (cells.length === 0) out.push('no cells');
  for (const c of cells) {
    const r = c.getBoundingClientRect(), name = c.tagName + ' "' + c.textContent + '"';
    if (r.width === 0) out.push(name + ' not drawn');
    else if (r.left < left - 0.5 || r.right > right + 0.5) out.push(name + ' [' + Math.round(r.left) + ', ' + Math.round(r.right) + '] not inside the panel [' + Math.round(left) + ', ' + Math.round(right) + ']');
    else if (c.scrollWidth > c.clientWidth + 1) out.push(name + ' cut off');
    else if (%v && (r.right > innerWidth || r.bottom > innerHeight || r.top < 0)) out.push(name + ' out of the window');
  }
  return out;
})()`, viewport)
}

// TestLiveFitsAfterACrash crashes an instance of the demo deployment and
// looks at its live page at 1600x1000, then at 1280x800: every node of
// the topology inside its graph, and every header and cell of the
// failover table inside its panel, without a sideways scroll. At
// 1600x1000 both are in the window at once, which the screenshot
// live-failover shows.
func TestLiveFitsAfterACrash(t *testing.T) {
	url := startServe(t)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	tasks := make([]string, 0, 2*demoPartitions)
	for sub := range 2 {
		for p := range demoPartitions {
			tasks = append(tasks, fmt.Sprintf("%d_%d", sub, p))
		}
	}
	const liveNodes = `[data-testid="live-graph-canvas"] [data-testid^="live-node-"]`
	const withDowntime = `Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).filter(r => /^\d+$/.test(r.dataset.downtime)).length`

	b := newBrowserSized(t, 1600, 1000)
	var active map[string][]string
	b.stepWithin(60*time.Second, "open the live view and wait for every task to run",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		waitJS(settledJS(tasks), 50*time.Second),
		eval(liveActive, &active))
	victim := ""
	for _, where := range active {
		if inst := strings.SplitN(where[0], "/", 2)[0]; victim == "" || inst < victim {
			victim = inst
		}
	}
	b.stepWithin(60*time.Second, "crash "+victim+" and see its tasks fail over",
		chromedp.Click(tid("crash-"+victim)),
		waitJS(withDowntime+` > 0`, 50*time.Second),
		eval(`(window.scrollTo(0, 0), true)`, new(bool)),
		until(`window.scrollY === 0`))
	expectNone(t, b, "1600x1000: topology nodes in the graph", outsideJS(liveNodes, `[data-testid="live-graph-canvas"]`, 10, ""), 5*time.Second)
	expectNone(t, b, "1600x1000: topology nodes in the window", outsideViewportJS(liveNodes), time.Second)
	expectNone(t, b, "1600x1000: failover table", failoverTableJS(true), 5*time.Second)
	saveSuccessShot(t, b, "live-failover")

	small := newBrowserSized(t, 1280, 800)
	small.stepWithin(60*time.Second, "open the live view at 1280x800 and see the failovers",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		waitJS(withDowntime+` > 0`, 50*time.Second),
		until(`document.querySelector('[data-testid="live-graph-canvas"]').dataset.zoom !== undefined`))
	expectNone(t, small, "1280x800: topology nodes in the graph", outsideJS(liveNodes, `[data-testid="live-graph-canvas"]`, 10, ""), 5*time.Second)
	expectNone(t, small, "1280x800: failover table", failoverTableJS(false), 5*time.Second)
}

// outsideViewportJS is JavaScript listing the elements of items whose box
// is not inside the window.
func outsideViewportJS(items string) string {
	return fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).filter(e => { const r = e.getBoundingClientRect(); return r.left < 0 || r.top < 0 || r.right > innerWidth || r.bottom > innerHeight; }).map(e => e.dataset.testid + ' out of the window')`, items)
}

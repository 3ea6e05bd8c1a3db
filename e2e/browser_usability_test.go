package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The tests of issue 18, a user's report on the editor and the live page.

// badges counts the record-count badges on the canvas.
const badges = `document.querySelector('[data-testid="canvas"]').querySelectorAll('[data-testid^="badge-"]').length`

// TestPreviewBadgesOnlyAfterARun opens the preview panel before any run
// and closes it after one: badges (records per node) show only while the
// panel shows a result, never a "null" badge.
func TestPreviewBadgesOnlyAfterARun(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	b := newBrowser(t)

	var before int
	b.step("open the demo and its preview panel, before any run",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.WaitVisible(tid("node-source")),
		chromedp.Click(tid("preview")),
		chromedp.WaitVisible(tid("generate-orders")),
		eval(badges, &before))
	if before != 0 {
		t.Errorf("the preview panel opened before a run puts %d badge(s) on the canvas, want none", before)
	}
	var texts []string
	b.step("run a preview and see a count on each node",
		chromedp.Click(tid("generate-orders")),
		chromedp.Click(tid("run-preview")),
		chromedp.WaitVisible(tid("window-closed-0")),
		until(badges+` > 0`),
		eval(`Array.from(document.querySelector('[data-testid="canvas"]').querySelectorAll('[data-testid^="badge-"] text')).map(e => e.textContent)`, &texts))
	for _, s := range texts {
		if s == "" || s == "null" || s == "undefined" || s == "NaN" {
			t.Errorf("a badge reads %q after a run: %q", s, texts)
		}
	}
	b.step("close the panel and see the badges go",
		chromedp.Click(tid("preview")),
		until(`document.querySelector('[data-testid="preview-panel"]').hidden`),
		until(badges+` === 0`))
}

// TestLiveWindowsEventsAndFailoverUnits follows the demo deployment's live page: the closed
// windows list numbers its items past 9 in full, late drops of one task and
// window are one timeline row with a count while the rare events keep
// their rows, and the failover table says its units.
func TestLiveWindowsEventsAndFailoverUnits(t *testing.T) {
	url := startServe(t)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	b := newBrowser(t)

	b.step("open the live view",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="connection"][data-state="open"]`)))

	var heads []string
	b.step("read the failover table's headers",
		eval(`Array.from(document.querySelectorAll('[data-testid="failover-table"] th')).map(e => e.textContent)`, &heads))
	for _, want := range []string{"detection (ms)", "recovery (ms)", "downtime (ms)"} {
		if !contains(heads, want) {
			t.Errorf("failover table headers %q have no %q", heads, want)
		}
	}

	// The demo closes a window of 10 s on each of its 4 windowed tasks
	// every 10 s, after 5 s of grace.
	var numbers []string
	var inside bool
	b.stepWithin(100*time.Second, "see eleven windows close and read their numbers",
		waitJS(`!!document.querySelector('[data-testid="closed-10"]')`, 95*time.Second),
		eval(`Array.from(document.querySelectorAll('[data-testid="closed-windows"] > li')).map(li => { const n = li.querySelector('.lv-closed-n'); return n ? n.textContent : li.innerText.trim().split(/\s/)[0]; })`, &numbers),
		eval(`(() => {
			const box = document.querySelector('[data-testid="closed-windows"]').getBoundingClientRect();
			const n = document.querySelector('[data-testid="closed-9"] .lv-closed-n');
			if (!n) return false;
			const r = n.getBoundingClientRect();
			return r.width > 0 && r.left >= box.left && r.right <= box.right;
		})()`, &inside))
	for i, n := range numbers {
		if want := strconv.Itoa(i+1) + "."; n != want {
			t.Errorf("closed window %d is numbered %q, want %q (all: %q)", i, n, want, numbers)
			break
		}
	}
	if !inside {
		t.Error("the number of closed window 10 is not drawn inside the list")
	}

	// The demo's generator sends 2% of its records 20 s late.
	var rows struct{ Rows, Events, Rare int }
	const lateRows = `(() => {
		const rows = Array.from(document.querySelectorAll('[data-testid="events-list"] > li'));
		const late = rows.filter(r => r.dataset.kind === 'late-drop');
		return {Rows: late.length, Events: late.reduce((s, r) => s + Number(r.dataset.count || 1), 0),
			Rare: rows.filter(r => r.dataset.kind !== 'late-drop' && r.dataset.kind !== 'window-closed').length};
	})()`
	b.stepWithin(60*time.Second, "see late drops grouped by task and window",
		waitJS(`(() => { const r = `+lateRows+`; return r.Rows > 0 && r.Events > r.Rows; })()`, 55*time.Second),
		waitJS(`Array.from(document.querySelectorAll('[data-testid="event-group-text"]')).some(e => /^late record dropped ×\d+ — task \d+_\d+, window \[/.test(e.textContent))`, 5*time.Second),
		eval(lateRows, &rows))
	var dup bool
	b.step("find one row per task and window",
		eval(`(() => { const seen = new Set(); for (const e of document.querySelectorAll('[data-testid="event-group-text"]')) { if (seen.has(e.textContent.replace(/×\d+/, ''))) return true; seen.add(e.textContent.replace(/×\d+/, '')); } return false; })()`, &dup))
	if dup {
		t.Error("two timeline rows group the late drops of one task and window")
	}
	t.Logf("late drops: %d events in %d rows; %d other rows", rows.Events, rows.Rows, rows.Rare)
}

// TestDesignNameWithSpaces renames the demo "Big orders per customer": the
// rename is taken and validation agrees (no problem), and the compile view
// names the application id the deployment runs with.
func TestDesignNameWithSpaces(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	waitDeployment(t, url, id)
	b := newBrowser(t)

	b.step("open the demo",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.WaitVisible(tid("node-source")))
	b.step("rename it with spaces",
		chromedp.Click(tid("rename-design")),
		chromedp.WaitVisible(tid("design-name-input")),
		chromedp.SetValue(tid("design-name-input"), "Big orders per customer"),
		chromedp.SendKeys(tid("design-name-input"), "\r"),
		until(`document.querySelector('[data-testid="design-name"]').textContent.includes("Big orders per customer")`),
		until(`document.querySelector('[data-testid="status"]').textContent.includes("Renamed")`))
	var app string
	b.step("compile it: no problem, and the deployment's application id",
		chromedp.Click(tid("compile")),
		chromedp.WaitVisible(tid("compile-app-id")),
		until(`document.querySelectorAll('[data-testid^="problem-"]').length === 0`),
		eval(`document.querySelector('[data-testid="compile-app-id"]').textContent`, &app))
	var deployed struct{ ApplicationID string }
	getJSON(t, url+"/api/deployments/"+id, &deployed)
	if deployed.ApplicationID == "" || !strings.Contains(app, "application id "+deployed.ApplicationID+":") {
		t.Errorf("the compile view says %q; the deployment runs as %q", app, deployed.ApplicationID)
	}
	b.step("reload: the name is kept and still valid",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		until(`document.querySelector('[data-testid="design-name"]').textContent.includes("Big orders per customer")`),
		until(`document.querySelectorAll('[data-testid^="problem-"]').length === 0`))
}

// getJSON decodes the JSON answer of a GET.
func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestDesignsListNewSearchDeployed: the designs list marks the deployed
// design and links its live view, filters as one types, and a new design
// is named in a dialog that reports a name the server refuses.
func TestDesignsListNewSearchDeployed(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	waitDeployment(t, url, id)
	other := createDesign(t, url, map[string]any{"name": "Payments per country", "version": 1, "nodes": []any{}, "edges": []any{}})
	b := newBrowser(t)

	var href string
	var otherBadge int
	b.step("open the designs list and see the demo deployed",
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(tid("deployed-"+id)),
		chromedp.WaitVisible(tid("name-"+other)),
		eval(`document.querySelector('[data-testid="deployed-`+id+`"]').getAttribute('href')`, &href),
		eval(`document.querySelectorAll('[data-testid="deployed-`+other+`"]').length`, &otherBadge))
	if href != "/live/"+id || otherBadge != 0 {
		t.Errorf("deployed badge links %q; the undeployed design has %d badge(s)", href, otherBadge)
	}
	b.step("search for payments",
		chromedp.SendKeys(tid("designs-search"), "PAYM"),
		until(`document.querySelector('[data-testid="design-`+id+`"]').hidden && !document.querySelector('[data-testid="design-`+other+`"]').hidden`))
	b.step("search for nothing that exists",
		chromedp.SendKeys(tid("designs-search"), "zzz"),
		chromedp.WaitVisible(tid("designs-no-match")),
		until(`document.querySelector('[data-testid="design-`+other+`"]').hidden`))

	b.step("ask for a new design and give a name the rule refuses",
		chromedp.Click(tid("new-design")),
		chromedp.WaitVisible(tid("new-design-dialog")),
		until(`document.querySelector('[data-testid="new-design-create"]').disabled`),
		chromedp.SendKeys(tid("new-design-name"), "--"),
		chromedp.Click(tid("new-design-create")),
		until(`document.querySelector('[data-testid="new-design-error"]').textContent.includes("letter or a digit")`))
	var cleared bool
	b.step("name it properly and land in its editor",
		eval(`(() => { const i = document.querySelector('[data-testid="new-design-name"]'); i.value = ''; return i.dispatchEvent(new Event('input')); })()`, &cleared),
		chromedp.SendKeys(tid("new-design-name"), "Big orders per customer"),
		chromedp.Click(tid("new-design-create")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		until(`document.querySelector('[data-testid="design-name"]').textContent.includes("Big orders per customer")`))
}

// TestPaletteFits: in a short window the palette says which kinds are
// below its fold and scrolls to them, its groups fold, and it does not
// offer the import-only "Unknown processor".
func TestPaletteFits(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	b := newBrowser(t)

	// visible: the kind's item lies inside the palette column's view.
	visible := func(kind string) string {
		return `(() => { const e = document.querySelector('[data-testid="palette-` + kind + `"]'); if (!e || e.offsetParent === null) return false;
			const col = document.querySelector('[data-testid="palette"]').parentElement.getBoundingClientRect(); const r = e.getBoundingClientRect();
			const more = document.querySelector('[data-testid="palette-more"]'); const hint = more && !more.hidden ? more.getBoundingClientRect().height : 0;
			return r.top >= col.top && r.bottom <= col.bottom - hint; })()`
	}
	var opaque int
	b.step("open the demo in a short window",
		chromedp.EmulateViewport(1280, 700),
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.WaitVisible(tid("palette-filter")),
		eval(`document.querySelectorAll('[data-testid="palette-opaque"]').length`, &opaque))
	if opaque != 0 {
		t.Error(`the palette offers the import-only "Unknown processor"`)
	}
	b.step("see the hint name the kinds below the fold",
		until(`!`+visible("sink")),
		chromedp.WaitVisible(tid("palette-more")),
		until(`document.querySelector('[data-testid="palette-more"]').title.includes("Sink")`))
	b.step("follow the hint down to the sink",
		chromedp.Click(tid("palette-more")),
		until(visible("sink")),
		until(`document.querySelector('[data-testid="palette-more"]').hidden`))
	b.step("fold the stateless group: its kinds go, and the hint counts the rest",
		chromedp.Click(tid("group-toggle-stateless")),
		until(`document.querySelector('[data-testid="group-stateless"]').dataset.collapsed === "true"`),
		until(`document.querySelector('[data-testid="palette-filter"]').offsetParent === null`),
		until(visible("source-stream")),
		until(`(() => { const m = document.querySelector('[data-testid="palette-more"]'); return m.hidden || !m.title.includes("Filter"); })()`))
}

// bigNodes is the JavaScript of 5000 unconnected sink nodes, over the
// server's limit of 1000.
const bigNodes = `Array.from({length: 5000}, (_, i) => ({id: 'n' + i, kind: 'sink', params: {topic: 't' + i}, position: {x: (i % 100) * 200, y: Math.floor(i / 100) * 80}}))`

// TestDesignOverTheLimit opens a design of 5000 nodes, over the limit the
// catalog gives (designer.MaxNodes): the editor says so instead of
// rendering it, which would freeze the tab. No such design can be saved
// any more, so the page's fetch hands the editor one in place of the demo,
// as a store written before the limit would. An upload of one is refused
// with the same words.
func TestDesignOverTheLimit(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	b := newBrowser(t)
	const want = "the design has 5000 nodes; at most 1000 are supported"

	swap := `(() => {
	  const real = window.fetch
	  window.fetch = function (input, init) {
	    const u = new URL(typeof input === 'string' ? input : input.url, location.href)
	    if (u.pathname !== '/api/designs/` + id + `' || (init && init.method && init.method !== 'GET')) return real.call(this, input, init)
	    return real.call(this, input, init).then(async (res) => {
	      const a = await res.json()
	      a.design.nodes = ` + bigNodes + `
	      a.design.edges = []
	      return new Response(JSON.stringify(a), {status: 200, headers: {'Content-Type': 'application/json'}})
	    })
	  }
	})()`
	var script page.ScriptIdentifier
	b.step("give the page a fetch that makes the demo design 5000 nodes",
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			r, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: swap})
			script = r.Identifier
			return err
		}))
	var text string
	b.step("open it and see why it is not shown",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(tid("design-too-big")),
		eval(`document.querySelector('[data-testid="design-too-big"]').textContent`, &text))
	if !strings.Contains(text, want) {
		t.Errorf("the message reads %q, want it to contain %q", text, want)
	}
	var nodes int
	b.step("count the nodes rendered",
		eval(`document.querySelectorAll('[data-testid="canvas"] .x6-node').length`, &nodes))
	if nodes != 0 {
		t.Errorf("%d nodes rendered, want none", nodes)
	}

	// The same design, uploaded from a file.
	var design string
	b.step("open the demo as it is and make a file of 5000 nodes",
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, page.RemoveScriptToEvaluateOnNewDocument, page.RemoveScriptToEvaluateOnNewDocumentParams{Identifier: script})
			return err
		}),
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		eval(`JSON.stringify({version: 1, name: 'big', nodes: `+bigNodes+`, edges: []})`, &design))
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, []byte(design), 0o644); err != nil {
		t.Fatal(err)
	}
	b.step("upload it and see why it is refused",
		chromedp.SetUploadFiles(tid("upload-json"), []string{file}),
		until(fmt.Sprintf(`document.querySelector('[data-testid="status"]').textContent.includes(%q)`, want)))
}

// overlaps is JavaScript defining overlap(a, b) on DOMRects (touching
// is not overlapping) and textRect(el), the box of an element's text.
const overlaps = `const overlap = (a, b) => a.width > 0 && b.width > 0 && a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
const textRect = (el) => { const r = document.createRange(); r.selectNodeContents(el); return r.getBoundingClientRect() };`

// TestLiveLegible follows the demo deployment's live page: the edges' rate
// labels overlap no node, and the window bars, late marks and stream-time
// line of a lane stay above the tick labels of its axis (wherever they are
// along it, so that none can ever cover one). That the graph shows every
// node is TestLiveFitsAfterACrash's.
func TestLiveLegible(t *testing.T) {
	url := startServe(t)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	b := newBrowser(t)

	b.step("open the live view and wait for rates and a window",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		until(`Array.from(document.querySelectorAll('[data-testid="live-graph-canvas"] .x6-edge-label text')).some(e => /[1-9]/.test(e.textContent))`),
		until(`document.querySelector('[data-testid^="window-"]') !== null`))

	var labels []string
	b.step("find rate labels over nodes",
		eval(`(() => { `+overlaps+`
		  const nodes = Array.from(document.querySelectorAll('[data-testid^="live-node-"]')).map(n => [n.dataset.nodeId, n.getBoundingClientRect()]);
		  const out = [];
		  for (const l of document.querySelectorAll('[data-testid="live-graph-canvas"] .x6-edge-label')) {
		    const r = l.getBoundingClientRect();
		    for (const [id, nr] of nodes) if (overlap(r, nr)) out.push(l.textContent + ' over ' + id);
		  }
		  return out })()`, &labels))
	if len(labels) > 0 {
		t.Errorf("rate labels overlap nodes: %q", labels)
	}

	var covered []string
	b.step("find lane marks reaching down to tick labels",
		eval(`(() => { `+overlaps+`
		  const out = [];
		  for (const axis of document.querySelectorAll('[data-testid="lane-list"] .lv-axis')) {
		    const ticks = Array.from(axis.querySelectorAll('.lv-tick')).map(e => [e.textContent, textRect(e)]);
		    for (const m of axis.querySelectorAll('.lv-window, .lv-grace, .lv-late, .lv-now')) {
		      const r = m.getBoundingClientRect();
		      for (const [text, tr] of ticks) if (r.width > 0 && tr.width > 0 && r.bottom > tr.top + 0.5) out.push(m.className + ' reaches ' + (r.bottom - tr.top).toFixed(1) + ' px into the label ' + text);
		    }
		  }
		  return out })()`, &covered))
	if len(covered) > 0 {
		t.Errorf("lane marks reach down to tick labels: %q", covered)
	}
}

package e2e

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// tid selects the element with a data-testid.
func tid(id string) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(`[data-testid=%q]`, id)) }

// until waits for a JavaScript condition to hold.
func until(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))
}

// eval runs JavaScript and decodes its value into out.
func eval[T any](js string, out *T) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		v, err := chromedp.Evaluate[T](js)(ctx, t)
		*out = v
		return err
	})
}

// demoDesignID finds the demo design braid serve loads into a new data dir.
func demoDesignID(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/api/designs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var designs []struct{ ID, Name string }
	if err := json.NewDecoder(resp.Body).Decode(&designs); err != nil {
		t.Fatal(err)
	}
	for _, d := range designs {
		if d.Name == "orders-demo" {
			return d.ID
		}
	}
	t.Fatalf("no orders-demo design in %v", designs)
	return ""
}

// nodeIDs lists the design's nodes on the canvas (the minimap draws them
// again).
const nodeIDs = `Array.from(new Set(Array.from(document.querySelector('[data-testid="canvas"]').querySelectorAll('[data-testid^="node-"]')).map(e => e.dataset.testid.slice(5))))`

// TestEditorAsANewUser walks through the editor as a new user would: open
// the demo, insert a filter between two nodes, get an expression wrong and
// right, save, reload, undo and redo, lay out, compile, preview a window
// closing and export Go that compiles.
func TestEditorAsANewUser(t *testing.T) {
	url := startServe(t)
	id := demoDesignID(t, url)
	b := newBrowser(t)
	downloads := t.TempDir()

	b.step("open the designs list",
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(tid("open-"+id)))
	b.step("open the demo design",
		chromedp.Click(tid("open-"+id)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.WaitVisible(tid("node-source")),
		chromedp.WaitVisible(tid("edge-filter-out-group-in")))

	added := dropFromPalette(t, b, "filter", 0.45, 0.8)

	b.step("remove the edge filter -> group",
		chromedp.Click(tid("edge-filter-out-group-in")),
		chromedp.KeyEvent(kb.Delete),
		chromedp.WaitNotPresent(tid("edge-filter-out-group-in")))
	b.step("wire filter -> new filter -> group",
		dragTestID("port-filter-out-out", "port-"+added+"-in-in"),
		chromedp.WaitVisible(tid("edge-filter-out-"+added+"-in")),
		dragTestID("port-"+added+"-out-out", "port-group-in-in"),
		chromedp.WaitVisible(tid("edge-"+added+"-out-group-in")))

	b.step("type an invalid expression",
		chromedp.Click(tid("node-"+added)),
		chromedp.WaitVisible(tid("param-predicate")),
		chromedp.SendKeys(tid("param-predicate"), "value.amount <"),
		until(`document.querySelector('[data-testid="node-`+added+`"]').dataset.problem === "true"`),
		until(`Array.from(document.querySelectorAll('[data-testid^="problem-"]')).some(e => e.textContent.includes("predicate"))`))
	b.step("fix it",
		chromedp.SendKeys(tid("param-predicate"), " 1000"),
		until(`document.querySelector('[data-testid="node-`+added+`"]').dataset.problem !== "true"`),
		until(`document.querySelectorAll('[data-testid^="problem-"]').length === 0`))

	b.step("save",
		chromedp.Click(tid("save")),
		until(`!document.querySelector('[data-testid="unsaved"]') || document.querySelector('[data-testid="unsaved"]').offsetParent === null`))
	b.step("reload and find the change kept",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.WaitVisible(tid("node-"+added)),
		chromedp.WaitVisible(tid("edge-"+added+"-out-group-in")))

	var pos1, pos2 string
	position := `JSON.stringify(Array.from(document.querySelector('[data-testid="canvas"]').querySelectorAll('[data-testid^="node-"]')).map(e => e.getAttribute('transform')))`
	b.step("auto-layout",
		eval(position, &pos1),
		chromedp.Click(tid("layout")),
		until(position+` !== `+jsString(pos1)),
		eval(position, &pos2))
	b.step("undo the layout",
		chromedp.Click(tid("undo")),
		until(position+` === `+jsString(pos1)))
	b.step("redo it",
		chromedp.Click(tid("redo")),
		until(position+` === `+jsString(pos2)))

	b.step("open the compile view and see two sub-topologies",
		chromedp.Click(tid("compile")),
		chromedp.WaitVisible(tid("describe")),
		until(`document.querySelectorAll('[data-testid^="subtopology-"]').length === 2`),
		until(`document.querySelector('[data-testid="describe"]').textContent.includes("Sub-topology: 1")`))

	b.step("run a preview and see a window close",
		chromedp.Click(tid("preview")),
		chromedp.WaitVisible(tid("generate-orders")),
		chromedp.Click(tid("generate-orders")),
		chromedp.Click(tid("run-preview")),
		chromedp.WaitVisible(tid("window-closed-0")))

	dctx, cancelDownload := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancelDownload()
	// Download events come from the browser, not the tab.
	progress := chromedp.BrowserEvents(dctx, cdpbrowser.DownloadProgress)
	b.step("export Go",
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads, EventsEnabled: ptr(true),
			})
			return err
		}),
		chromedp.Click(tid("export-go")))
	var file string
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("waiting for the download of the exported module: %v", err)
		}
		if ev.State == cdpbrowser.DownloadProgressStateCompleted {
			file = filepath.Join(downloads, ev.GUID)
			break
		}
	}
	if file == "" {
		t.Fatal("the download of the exported module did not complete")
	}
	buildExported(t, file, added)
}

// buildExported unpacks the downloaded module, checks that its program
// kept the new filter, builds it outside this repository as a user would
// (the go command as it is: modules from the cache or the proxy) and runs
// its --help.
func buildExported(t *testing.T, file, added string) {
	t.Helper()
	z, err := zip.OpenReader(file)
	if err != nil {
		t.Fatalf("the download is not a zip: %v", err)
	}
	defer z.Close()
	dir := t.TempDir()
	var module string
	for _, f := range z.File {
		name := filepath.FromSlash(f.Name)
		if !filepath.IsLocal(name) {
			t.Fatalf("the zip holds %q, outside its folder", f.Name)
		}
		first, _, _ := strings.Cut(f.Name, "/")
		if module == "" {
			module = first
		} else if first != module {
			t.Fatalf("the zip holds %q and %q/...: want one folder", f.Name, module)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(dir, module)
	src, err := os.ReadFile(filepath.Join(root, "main.go"))
	if err != nil {
		t.Fatalf("the module has no main.go: %v", err)
	}
	if !strings.Contains(string(src), "package main") || !strings.Contains(string(src), "1000") {
		t.Fatalf("the download is not the program with the new filter (%s):\n%s", added, src)
	}
	build := exec.Command("go", "build", "-o", "program", ".")
	build.Dir = root
	build.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the exported module: %v\n%s", err, out)
	}
	help, err := exec.Command(filepath.Join(root, "program"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "-brokers") {
		t.Fatalf("the exported program's --help: %v\n%s", err, help)
	}
}

// dropFromPalette drags a kind from the palette onto the canvas, at the
// fractions x and y of its width and height, and returns the id of the
// node it adds.
func dropFromPalette(t *testing.T, b *browser, kind string, x, y float64) string {
	t.Helper()
	var before, after []string
	var canvas struct{ X, Y, W, H float64 }
	b.step("drag a "+kind+" from the palette onto the canvas",
		eval(nodeIDs, &before),
		eval(`(() => { const r = document.querySelector('[data-testid="canvas"]').getBoundingClientRect(); return {X: r.x, Y: r.y, W: r.width, H: r.height}; })()`, &canvas),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			from, err := center(ctx, tg, "palette-"+kind)
			if err != nil {
				return err
			}
			return mouseDrag(ctx, tg, from, point{canvas.X + canvas.W*x, canvas.Y + canvas.H*y})
		}),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			// before is read by now, so the condition can be built.
			_, err := until(nodeIDs+`.length === `+fmt.Sprint(len(before)+1))(ctx, tg)
			return err
		}))
	b.step("find the new "+kind, eval(nodeIDs, &after))
	for _, n := range after {
		if !contains(before, n) {
			return n
		}
	}
	t.Fatalf("no new node: before %v, after %v", before, after)
	return ""
}

type point struct{ X, Y float64 }

// center returns the middle of the element with a data-testid, in the
// viewport's coordinates.
func center(ctx context.Context, t *chromedp.Target, testID string) (point, error) {
	js := fmt.Sprintf(`(() => { const e = document.querySelector('[data-testid=%q]'); if (!e) return null; const r = e.getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`, testID)
	p, err := chromedp.Evaluate[*point](js)(ctx, t)
	if err != nil {
		return point{}, err
	}
	if p == nil {
		return point{}, fmt.Errorf("no element with data-testid %q", testID)
	}
	return *p, nil
}

// mouseDrag presses the left button at from, moves to to in steps and
// releases it: the mouse events a graph editor's drag listens to (X6
// drags with mouse events, not the HTML drag and drop API).
func mouseDrag(ctx context.Context, t *chromedp.Target, from, to point) error {
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.MouseEvent(chromedp.MouseMoved, from.X, from.Y),
		chromedp.MouseEvent(chromedp.MousePressed, from.X, from.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
	}
	const n = 15
	for i := 1; i <= n; i++ {
		x := from.X + (to.X-from.X)*float64(i)/n
		y := from.Y + (to.Y-from.Y)*float64(i)/n
		steps = append(steps, chromedp.MouseEvent(chromedp.MouseMoved, x, y, chromedp.ButtonLeft), chromedp.Sleep(15*time.Millisecond))
	}
	steps = append(steps, chromedp.MouseEvent(chromedp.MouseReleased, to.X, to.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	_, err := chromedp.Steps(steps...)(ctx, t)
	return err
}

// dragTestID drags from the middle of one element to the middle of
// another.
func dragTestID(from, to string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		f, err := center(ctx, t, from)
		if err != nil {
			return err
		}
		g, err := center(ctx, t, to)
		if err != nil {
			return err
		}
		return mouseDrag(ctx, t, f, g)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

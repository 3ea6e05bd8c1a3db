package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestImportDescribeShowsNotes imports a windowed count's describe() in
// the editor: describe() does not say the window, so the dialog shows the
// importer's notes, naming the nodes, before it opens the new design, and
// the design's windowed-by node carries the problem of its missing size.
func TestImportDescribeShowsNotes(t *testing.T) {
	data, err := os.ReadFile("../compiler/testdata/describe-import/kafka-windowed-count-suppress.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(data), "\n---\n")
	if !ok {
		t.Fatal("the describe() file has no --- line")
	}
	url := startServe(t)
	id := demoDesignID(t, url)
	b := newBrowser(t)
	b.step("open the demo design",
		chromedp.Navigate(url+"/designs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)))
	b.step("import the describe() text",
		chromedp.Click(tid("import-describe")),
		chromedp.WaitVisible(tid("describe-text")),
		eval(`(() => { const ta = document.querySelector('[data-testid="describe-text"]'); ta.value = `+jsString(text)+`; return true })()`, new(bool)),
		chromedp.SendKeys(tid("describe-name"), "windowed import"),
		chromedp.Click(tid("import-describe-submit")),
		chromedp.WaitVisible(tid("import-note-0")))
	var notes []string
	b.step("read the notes",
		eval(`Array.from(document.querySelectorAll('[data-testid^="import-note-"]')).map(e => e.textContent)`, &notes))
	var onWindow bool
	for _, n := range notes {
		onWindow = onWindow || strings.Contains(n, "(windowed-by)") && strings.Contains(n, "KTABLE-SUPPRESS")
	}
	if !onWindow {
		t.Fatalf("no note names the windowed-by node the suppress became: %q", notes)
	}
	b.step("open the imported design and see the window's problem on its node",
		chromedp.Click(tid("import-open")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		until(`Array.from(document.querySelectorAll('[data-testid^="problem-"]')).some(e => e.textContent.includes('size'))`))
}

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sinkArrivals counts what a topic receives, by the time each record
// arrived, read from its start until the test ends.
type sinkArrivals struct {
	mu sync.Mutex
	at []time.Time
}

func readArrivals(t *testing.T, brokers []string, topic string) *sinkArrivals {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	s := &sinkArrivals{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			now := time.Now()
			s.mu.Lock()
			fs.EachRecord(func(*kgo.Record) { s.at = append(s.at, now) })
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cl.Close() })
	return s
}

// since is how long ago the first record arrived, 0 before one did.
func (s *sinkArrivals) since() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.at) == 0 {
		return 0
	}
	return time.Since(s.at[0])
}

// between counts the records that arrived in (now-from, now-to].
func (s *sinkArrivals) between(from, to time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, n := time.Now(), 0
	for _, at := range s.at {
		if at.After(now.Add(-from)) && !at.After(now.Add(-to)) {
			n++
		}
	}
	return n
}

// TestLiveWindowedCountAverage opens the demo's live page while its
// windowed count (10 s windows, emitted on close) sends output to the
// sink, and reads the count node's label at 40 snapshots, over more than
// a window's cycle: each shows a non-zero out rate, averaged over the
// monitor's 20 s, within the rate the sink topic received over the same
// 20 s (a second's slack either side for the snapshot's age). The
// per-second rate read 0.00-0.04/s there between closes.
func TestLiveWindowedCountAverage(t *testing.T) {
	url, brokers := serveOnReachableBroker(t)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	sink := readArrivals(t, brokers, "big-orders-per-10s")
	b := newBrowser(t)
	b.step("open the live view",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		chromedp.WaitVisible(tid("live-node-count")))

	const span = 20 * time.Second
	deadline := time.Now().Add(90 * time.Second)
	for sink.since() < span+2*time.Second {
		if time.Now().After(deadline) {
			t.Fatalf("the sink topic received its first record %v ago, want output flowing for %v", sink.since(), span+2*time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}

	const node = `document.querySelector('[data-testid="live-node-count"]')`
	last := ""
	for i := range 40 {
		var shown struct {
			Out  string `json:"out"`
			Text string `json:"text"`
		}
		b.step(fmt.Sprintf("read the count's label, snapshot %d", i),
			waitJS(fmt.Sprintf(`%s.dataset.out !== %q`, node, last), 5*time.Second),
			eval(fmt.Sprintf(`(() => { const n = %s; return {out: n.dataset.out, text: n.textContent.replace(/\u00a0/g, " ")}; })()`, node), &shown))
		last = shown.Out
		out, err := strconv.ParseFloat(shown.Out, 64)
		if err != nil {
			t.Fatalf("the count node's data-out is %q", shown.Out)
		}
		// What the sink received over the span, taken a second later or
		// earlier than the snapshot: the least and most it can be.
		lo := float64(sink.between(span-time.Second, time.Second)) / span.Seconds()
		hi := float64(sink.between(span+time.Second, 0)) / span.Seconds()
		if out <= 0 || out < 0.9*lo || out > 1.1*hi {
			t.Errorf("snapshot %d: the count node shows %.2f/s out (label %q) while the sink received %.2f-%.2f/s over the last 20 s",
				i, out, shown.Text, lo, hi)
		}
		if !strings.Contains(shown.Text, "out "+rateText(out)+"/s") || !strings.Contains(shown.Text, "avg 20s") {
			t.Errorf("snapshot %d: the count node's label %q does not show out %s/s averaged over 20 s", i, shown.Text, rateText(out))
		}
	}
	saveSuccessShot(t, b, "live-windowed-count-average")
}

// rateText is format.js's rate(): how the page writes a rate.
func rateText(v float64) string {
	switch {
	case v >= 10000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + "k"
	case v >= 100:
		return strconv.FormatFloat(float64(int64(v+0.5)), 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

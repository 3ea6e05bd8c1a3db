package streams

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// TestReachabilityTransitions feeds a tracker connection events on a
// clock the test moves, and checks what it reports: an outage once, when
// a failure comes after unreachableAfter of silence, with Since at the
// last answer; the return once, at the next answer.
func TestReachabilityTransitions(t *testing.T) {
	refused := syscall.ECONNREFUSED
	type step struct {
		at     time.Duration // since the tracker started
		answer bool
		err    error
		want   string // "down@<since>", "up@<since>" or ""
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a blip among answers is no outage", []step{
			{at: 0, answer: true},
			{at: 300 * time.Millisecond, err: refused},
			{at: 400 * time.Millisecond, answer: true},
		}},
		{"silence then a failure is an outage from the last answer", []step{
			{at: 0, answer: true},
			{at: 500 * time.Millisecond, err: refused},
			{at: 1500 * time.Millisecond, err: refused, want: "down@0s"},
			{at: 3 * time.Second, err: refused},
			{at: 5 * time.Second, answer: true, want: "up@0s"},
			{at: 6 * time.Second, answer: true},
		}},
		{"a broker that never answered is down from the start", []step{
			{at: 2 * time.Second, err: refused, want: "down@0s"},
			{at: 4 * time.Second, answer: true, want: "up@0s"},
		}},
		{"a cancelled request says nothing of the broker", []step{
			{at: 0, answer: true},
			{at: 5 * time.Second, err: fmt.Errorf("fetching: %w", context.Canceled)},
		}},
		{"two outages are two", []step{
			{at: 0, answer: true},
			{at: 2 * time.Second, err: refused, want: "down@0s"},
			{at: 3 * time.Second, answer: true, want: "up@0s"},
			{at: 10 * time.Second, err: refused, want: "down@3s"},
			{at: 11 * time.Second, answer: true, want: "up@3s"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1_700_000_000, 0)
			now := start
			var got []BrokerReachabilityEvent
			r := &reachability{now: func() time.Time { return now }, brokers: map[string]*brokerState{}, started: start}
			r.report = func(ev BrokerReachabilityEvent) { got = append(got, ev) }
			for i, s := range tc.steps {
				now = start.Add(s.at)
				got = got[:0]
				if s.answer {
					r.answered("127.0.0.1:9092")
				} else {
					r.failed("127.0.0.1:9092", s.err)
				}
				var said string
				if len(got) > 1 {
					t.Fatalf("step %d: %d events, want at most 1", i, len(got))
				}
				if len(got) == 1 {
					kind := "down"
					if got[0].Reachable {
						kind = "up"
					}
					said = kind + "@" + got[0].Since.Sub(start).String()
					if got[0].Reachable != (got[0].Err == nil) {
						t.Errorf("step %d: Reachable %v with Err %v", i, got[0].Reachable, got[0].Err)
					}
				}
				if said != s.want {
					t.Errorf("step %d at %v: reported %q, want %q", i, s.at, said, s.want)
				}
				if down := len(r.unreachable()) > 0; down && !r.anyFailing() {
					t.Errorf("step %d: a broker is unreachable but none failing", i)
				}
				if failing, want := r.anyFailing(), !s.answer && !ignoredConnError(s.err); failing != want {
					t.Errorf("step %d: anyFailing() = %v, want %v", i, failing, want)
				}
			}
		})
	}
}

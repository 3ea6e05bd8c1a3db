package broker

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Silence freezes the broker at the first request for which hold returns
// true: that request and every one after it, of any client, wait without
// an answer, as they do at a broker stopped with SIGSTOP, until resume is
// called; then the broker answers them and those that follow as usual.
// It is for tests of clients that must not wait for an answer forever.
// Call resume before Close: a held request waits for it.
func (b *Broker) Silence(hold func(kmsg.Request) bool) (resume func()) {
	resumed := make(chan struct{})
	b.cluster.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		select {
		case <-resumed:
		default:
			if hold(req) {
				b.cluster.SleepControl(func() { <-resumed })
			}
		}
		return nil, nil, false // answered as usual
	})
	var once sync.Once
	return func() { once.Do(func() { close(resumed) }) }
}

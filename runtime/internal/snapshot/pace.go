package snapshot

import (
	"context"
	"io"
	"time"
)

// pacer bounds the bandwidth of one upload: after each read, it sleeps
// until the bytes read so far are no more than the rate allows since the
// upload began. A token bucket would allow bursts; an upload has no use
// for them, and the steady pace is what leaves the task its share of the
// link.
type pacer struct {
	perSecond int64
	start     time.Time
	sent      int64
	// now and sleep are the clock, replaced in tests.
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// newPacer returns a pacer of perSecond bytes a second; 0 or less does not
// pace.
func newPacer(perSecond int64) *pacer {
	return &pacer{perSecond: perSecond, start: time.Now(), now: time.Now, sleep: sleepCtx}
}

// reader paces reads from r.
func (p *pacer) reader(ctx context.Context, r io.Reader) io.Reader {
	if p.perSecond <= 0 {
		return r
	}
	return &pacedReader{ctx: ctx, r: r, p: p}
}

// wait sleeps until n more bytes are within the pace.
func (p *pacer) wait(ctx context.Context, n int) error {
	p.sent += int64(n)
	due := p.start.Add(time.Duration(float64(p.sent) / float64(p.perSecond) * float64(time.Second)))
	if d := due.Sub(p.now()); d > 0 {
		return p.sleep(ctx, d)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type pacedReader struct {
	ctx context.Context
	r   io.Reader
	p   *pacer
}

// Read reads at most a tenth of a second's worth, so that the pace holds
// within a tenth of a second however large the caller's buffer.
func (r *pacedReader) Read(b []byte) (int, error) {
	if chunk := max(r.p.perSecond/10, 1); int64(len(b)) > chunk {
		b = b[:chunk]
	}
	n, err := r.r.Read(b)
	if n > 0 {
		if werr := r.p.wait(r.ctx, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}

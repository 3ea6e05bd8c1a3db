package wsbridge

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/gofiber/fiber/v2"
)

// Options configure a Bridge.
type Options struct {
	// Accept is passed to websocket.Accept (origin patterns, compression,
	// subprotocols). nil: defaults (same-origin only).
	Accept *websocket.AcceptOptions
	// Logger receives panics recovered in handlers and upgrade failures;
	// default: discard.
	Logger *slog.Logger
}

// Bridge turns fiber requests into websocket connections and tracks them so
// that shutdown closes them.
type Bridge struct {
	accept *websocket.AcceptOptions
	log    *slog.Logger

	mu      sync.Mutex
	closing bool
	// conns holds the hijacked connections from the hijack until their
	// handler returns, handshake included.
	conns map[*tracked]struct{}
	// idle is closed once closing is set and conns is empty.
	idle chan struct{}

	active atomic.Int64
}

// tracked is one hijacked connection.
type tracked struct {
	raw net.Conn
	// conn and cancel are set, under Bridge.mu, once the handshake
	// succeeded; cancel ends the handler's context.
	conn   *websocket.Conn
	cancel context.CancelFunc
}

// goAwayReason is the reason of the close frames sent on shutdown.
const goAwayReason = "the server is shutting down"

// goAwayGrace bounds how long Shutdown lets a connection's close handshake
// run before it cancels the handler's context anyway.
const goAwayGrace = time.Second

// goAway closes t with 1001 and then cancels its handler's context. The
// order matters: coder/websocket drops the connection without a close frame
// when the context of a pending Read or CloseRead ends, so cancelling first
// would lose the 1001 for a handler that reads with its ctx.
func (t *tracked) goAway() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.conn.Close(websocket.StatusGoingAway, goAwayReason)
	}()
	timer := time.NewTimer(goAwayGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
	t.cancel()
}

// New returns a Bridge.
func New(opts Options) *Bridge {
	b := &Bridge{
		log:   opts.Logger,
		conns: make(map[*tracked]struct{}),
		idle:  make(chan struct{}),
	}
	if opts.Accept != nil {
		a := *opts.Accept
		b.accept = &a
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b
}

// Handler returns a fiber handler for a websocket route. fn runs for the
// whole life of the connection, on its own goroutine after the hijack; ctx
// is cancelled when the bridge shuts down (fn should then close the conn with
// websocket.StatusGoingAway, which the bridge also does for it if fn returns
// without closing). r is a deep copy of the request (method, URL, Host,
// headers, RemoteAddr, TLS state) built before the hijack; its Context is
// ctx. A request that is not a websocket upgrade gets what websocket.Accept
// answers (426). After Shutdown began, upgrades get 503.
//
// On shutdown the bridge starts the 1001 close handshake itself before it
// cancels ctx (see Shutdown), so a handler blocked in conn.Read(ctx, ...)
// gets the peer's close and its clients see 1001. When fn returns without
// closing, the bridge closes the conn: with websocket.StatusGoingAway during
// shutdown, websocket.StatusInternalError after a panic in fn (which it
// recovers and logs), websocket.StatusNormalClosure otherwise.
func (b *Bridge) Handler(fn func(ctx context.Context, conn *websocket.Conn, r *http.Request)) fiber.Handler {
	if fn == nil {
		panic("wsbridge: Handler needs a function")
	}
	return func(c *fiber.Ctx) error {
		fc := c.Context()
		if b.isClosing() {
			fc.SetConnectionClose()
			return fiber.NewError(fiber.StatusServiceUnavailable, "the server is shutting down")
		}
		// Trap 3: everything fn will read is copied now; the Ctx is
		// recycled before the hijack callback runs.
		r, err := copyRequest(fc)
		if err != nil {
			fc.SetConnectionClose()
			return fiber.NewError(fiber.StatusBadRequest, err.Error())
		}
		// Trap 2: without this fasthttp writes a 200 before the callback.
		fc.HijackSetNoResponse(true)
		fc.Hijack(func(nc net.Conn) { b.serve(nc, r, fn) })
		return nil
	}
}

// Shutdown makes new upgrades answer 503, cancels every handler's ctx,
// waits for the handlers to return, and when ctx ends first force-closes the
// remaining connections and returns ctx.Err(). Safe to call more than once.
//
// Each open connection gets a close frame with status 1001 (going away)
// before its handler's ctx is cancelled: the ctx ends when the close
// handshake is over, or after a second if the peer does not answer.
func (b *Bridge) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if !b.closing {
		b.closing = true
		for t := range b.conns {
			if t.conn != nil {
				go t.goAway()
			}
		}
		if len(b.conns) == 0 {
			close(b.idle)
		}
	}
	b.mu.Unlock()

	select {
	case <-b.idle:
		return nil
	case <-ctx.Done():
	}
	type victim struct {
		raw    net.Conn
		cancel context.CancelFunc
	}
	b.mu.Lock()
	left := make([]victim, 0, len(b.conns))
	for t := range b.conns {
		left = append(left, victim{t.raw, t.cancel})
	}
	b.mu.Unlock()
	for _, v := range left {
		// Closing the real connection ends any read or write on it;
		// cancel is nil for a connection still in its handshake.
		v.raw.Close()
		if v.cancel != nil {
			v.cancel()
		}
	}
	if len(left) > 0 {
		b.log.Warn("wsbridge: shutdown timed out; closed the remaining websocket connections", "connections", len(left))
	}
	return ctx.Err()
}

// Active returns the number of open websocket connections.
func (b *Bridge) Active() int { return int(b.active.Load()) }

func (b *Bridge) isClosing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closing
}

// track registers t unless the bridge is shutting down.
func (b *Bridge) track(t *tracked) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.conns[t] = struct{}{}
	return true
}

func (b *Bridge) untrack(t *tracked) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns, t)
	if b.closing && len(b.conns) == 0 {
		// Nothing can be added once closing, so this runs once.
		close(b.idle)
	}
}

// serve runs on fasthttp's hijack goroutine: it does the handshake on the
// real connection and runs fn. fasthttp closes the connection when serve
// returns.
func (b *Bridge) serve(hc net.Conn, r *http.Request, fn func(context.Context, *websocket.Conn, *http.Request)) {
	defer func() {
		// The last resort: fasthttp does not recover in this goroutine,
		// and a panic here would end the process.
		if p := recover(); p != nil {
			b.log.Error("wsbridge: panic while serving a websocket", "panic", p, "path", r.URL.Path, "remote", r.RemoteAddr, "stack", string(debug.Stack()))
		}
	}()

	// Trap 4: the wrapper ignores Close; the real connection does not.
	u, ok := hc.(unsafeConner)
	if !ok {
		b.log.Error("wsbridge: the hijacked connection has no UnsafeConn method (fasthttp changed?); refusing the upgrade", "type", fmt.Sprintf("%T", hc), "path", r.URL.Path, "remote", r.RemoteAddr)
		writeAnswer(hc, r, http.StatusInternalServerError, nil, nil)
		return
	}
	raw := u.UnsafeConn()
	// Trap 5: take fasthttp's buffered bytes before its buffer goes back
	// to the pool.
	buffered, err := drain(hc, raw)
	if err != nil {
		b.log.Warn("wsbridge: cannot take over the connection", "err", err, "path", r.URL.Path, "remote", r.RemoteAddr)
		return
	}

	t := &tracked{raw: raw}
	if !b.track(t) {
		// Shutdown began between the fiber handler and here.
		writeAnswer(raw, r, http.StatusServiceUnavailable, nil, []byte(goAwayReason+"\n"))
		lingerClose(raw)
		return
	}
	defer b.untrack(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r = r.WithContext(ctx)

	w := newResponseWriter(raw, buffered)
	conn, err := websocket.Accept(w, r, b.accept)
	if err != nil {
		status := w.finish(r)
		b.log.Info("wsbridge: upgrade refused", "status", status, "err", err, "path", r.URL.Path, "remote", r.RemoteAddr)
		lingerClose(raw)
		return
	}
	b.active.Add(1)
	defer b.active.Add(-1)

	b.mu.Lock()
	closing := b.closing
	t.conn, t.cancel = conn, cancel
	b.mu.Unlock()
	if closing {
		// Shutdown began during the handshake and did not see conn.
		conn.Close(websocket.StatusGoingAway, goAwayReason)
		return
	}

	panicked := b.run(ctx, conn, r, fn)
	switch {
	case panicked:
		conn.Close(websocket.StatusInternalError, "internal error")
	case b.isClosing():
		conn.Close(websocket.StatusGoingAway, goAwayReason)
	default:
		conn.Close(websocket.StatusNormalClosure, "")
	}
}

// run calls fn and reports whether it panicked.
func (b *Bridge) run(ctx context.Context, conn *websocket.Conn, r *http.Request, fn func(context.Context, *websocket.Conn, *http.Request)) (panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			panicked = true
			b.log.Error("wsbridge: panic in a websocket handler", "panic", p, "path", r.URL.Path, "remote", r.RemoteAddr, "stack", string(debug.Stack()))
		}
	}()
	fn(ctx, conn, r)
	return false
}

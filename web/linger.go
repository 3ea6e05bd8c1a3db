package web

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Lingering: when fasthttp refuses a body over the limit it answers 413
// at once and closes the connection, while the client is still sending
// the body. Closing a socket with unread data sends a TCP reset, which
// can destroy the 413 before the client reads it: a browser then shows
// a network error instead. A connection marked to linger is closed as
// net/http closes one in that case: the write side first (the answer
// then ends with a FIN), then what the client still sends is read and
// dropped, for a while, before the socket closes.

const (
	lingerTime  = 5 * time.Second
	lingerBytes = 64 << 20
)

// lingerListener hands out lingerConns and tracks those lingering, so
// that a shutdown can end them.
type lingerListener struct {
	net.Listener
	mu        sync.Mutex
	lingering map[*lingerConn]struct{}
	stopped   bool
	wg        sync.WaitGroup
}

func newLingerListener(ln net.Listener) *lingerListener {
	return &lingerListener{Listener: ln, lingering: make(map[*lingerConn]struct{})}
}

func (l *lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c, ln: l}, nil
}

// stopLingering closes every lingering connection now and waits for
// their goroutines.
func (l *lingerListener) stopLingering() {
	l.mu.Lock()
	l.stopped = true
	for c := range l.lingering {
		c.Conn.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// lingerConn is a connection that can be told to linger when closed.
type lingerConn struct {
	net.Conn
	ln     *lingerListener
	linger atomic.Bool
	closed atomic.Bool
}

// lingerOnClose marks c to linger when it is closed.
func (c *lingerConn) lingerOnClose() { c.linger.Store(true) }

func (c *lingerConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	tcp, ok := c.Conn.(*net.TCPConn)
	if !c.linger.Load() || !ok {
		return c.Conn.Close()
	}
	if err := tcp.CloseWrite(); err != nil {
		return c.Conn.Close()
	}
	c.ln.mu.Lock()
	if c.ln.stopped {
		c.ln.mu.Unlock()
		return c.Conn.Close()
	}
	c.ln.lingering[c] = struct{}{}
	c.ln.wg.Add(1)
	c.ln.mu.Unlock()
	go func() {
		defer c.ln.wg.Done()
		_ = c.Conn.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, c.Conn, lingerBytes)
		c.Conn.Close()
		c.ln.mu.Lock()
		delete(c.ln.lingering, c)
		c.ln.mu.Unlock()
	}()
	return nil
}

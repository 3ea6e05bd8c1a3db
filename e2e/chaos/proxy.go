package chaos

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is a loopback TCP proxy that can cut the network between the
// broker and every client: a broker advertising the proxy's address
// (`braid broker --advertise`) has every client connection, bootstrap
// and metadata-directed alike, go through it. Cut resets every open
// connection and makes new ones fail until Restore: a connection is
// accepted and reset at once, so that clients see a network that
// refuses them, not one that hangs.
//
// The proxy ends connections with a reset (RST), never a clean close:
// franz-go takes a clean close before the first response for a client
// misconfigured (TLS, SASL) and fails the request for good, where a
// reset, what a network cut or a crashed broker gives, is retried. The
// same goes for a connection the target refuses, which is what a client
// of a killed broker sees.
type Proxy struct {
	ln net.Listener

	mu       sync.Mutex
	target   string
	cut      bool
	conns    map[net.Conn]struct{} // both ends of every open connection
	accepted int
	closed   bool

	// wg counts the accept loop and every connection's copiers.
	wg sync.WaitGroup
}

// StartProxy listens on a free loopback port and forwards each
// connection to the target that SetTarget gives; until then it refuses
// them.
func StartProxy() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the fault proxy: %w", err)
	}
	p := &Proxy{ln: ln, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's address, the one the broker should advertise.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget sets the address new connections are forwarded to.
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = addr
}

// Accepted is how many connections the proxy has forwarded.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Cut resets every open connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.closeConns()
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Close stops the proxy, resets every connection and waits for its
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.closeConns()
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// closeConns resets every open connection; p.mu is held.
func (p *Proxy) closeConns() {
	for c := range p.conns {
		reset(c)
	}
	clear(p.conns)
}

// reset closes c with a TCP reset rather than a clean close.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		target, refuse := p.target, p.cut || p.closed || p.target == ""
		p.mu.Unlock()
		if refuse {
			reset(client)
			continue
		}
		// Dialed here, not in a goroutine, so that Close never races a
		// dial; a loopback dial is quick.
		server, err := net.DialTimeout("tcp", target, 5*time.Second)
		if err != nil {
			reset(client)
			continue
		}
		if !p.track(client, server) {
			continue
		}
		p.wg.Go(func() { p.pipe(client, server) })
		p.wg.Go(func() { p.pipe(server, client) })
	}
}

// track registers a connection's two ends, unless the proxy was cut or
// closed meanwhile, in which case it closes them and returns false.
func (p *Proxy) track(client, server net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.closed {
		reset(client)
		reset(server)
		return false
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.accepted++
	return true
}

// pipe copies from one end to the other until either fails, then resets
// both, so that the other direction's pipe ends too.
func (p *Proxy) pipe(from, to net.Conn) {
	// It ends with a cut or an end closed: the connection is over.
	_, _ = io.Copy(to, from)
	reset(from)
	reset(to)
	p.mu.Lock()
	delete(p.conns, from)
	delete(p.conns, to)
	p.mu.Unlock()
}

package wsbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gofiber/fiber/v2"
)

func echoServer(t *testing.T, opts Options) *testServer {
	return startServer(t, opts, nil, func(app *fiber.App, b *Bridge) {
		app.Get("/echo", b.Handler(echo))
	})
}

// Point 1 of the note: the 101 handshake works through the bridge (which
// fiber's adaptor cannot do), and a plain GET gets Accept's 426 with
// Connection: close.
func TestHandshake(t *testing.T) {
	t.Parallel()
	s := echoServer(t, Options{Accept: &websocket.AcceptOptions{
		Subprotocols:    []string{"braid.v1"},
		CompressionMode: websocket.CompressionContextTakeover,
	}})

	t.Run("upgrade", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, s.url("/echo"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("status %d, want 101", resp.StatusCode)
		}
		for i := range 3 {
			msg := fmt.Sprintf("hello %d", i)
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			typ, p, err := c.Read(ctx)
			if err != nil || typ != websocket.MessageText || string(p) != msg {
				t.Fatalf("echo: %v %q %v, want text %q", typ, p, err, msg)
			}
		}
		if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
			t.Fatalf("close handshake: %v", err)
		}
	})

	t.Run("subprotocol and compression", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, s.url("/echo"), &websocket.DialOptions{
			Subprotocols:    []string{"braid.v1"},
			CompressionMode: websocket.CompressionContextTakeover,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if c.Subprotocol() != "braid.v1" || !strings.Contains(resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") {
			t.Fatalf("subprotocol %q, extensions %q", c.Subprotocol(), resp.Header.Get("Sec-WebSocket-Extensions"))
		}
		big := bytes.Repeat([]byte("compressible "), 1000)
		if err := c.Write(ctx, websocket.MessageBinary, big); err != nil {
			t.Fatal(err)
		}
		if _, p, err := c.Read(ctx); err != nil || !bytes.Equal(p, big) {
			t.Fatalf("compressed echo: %d bytes, %v", len(p), err)
		}
		c.Close(websocket.StatusNormalClosure, "")
	})

	t.Run("plain GET gets 426", func(t *testing.T) {
		resp, body, closed := roundTrip(t, s.addr, "GET /echo HTTP/1.1\r\nHost: "+s.addr+"\r\n\r\n")
		if resp.StatusCode != http.StatusUpgradeRequired {
			t.Fatalf("status %d, want 426; body %q", resp.StatusCode, body)
		}
		// net/http's reader turns Connection: close into resp.Close.
		if !resp.Close || !closed {
			t.Fatalf("Connection: close %v, connection closed %v; want true, true", resp.Close, closed)
		}
		// And through net/http's client.
		r, err := http.Get("http://" + s.addr + "/echo")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusUpgradeRequired || !r.Close {
			t.Fatalf("net/http client: status %d, Close %v", r.StatusCode, r.Close)
		}
	})
	waitFor(t, "Active() == 0", 5*time.Second, func() bool { return s.bridge.Active() == 0 })
}

// Point 2 of the note: HijackSetNoResponse; the first bytes on the wire are
// the 101, not a 200 of fasthttp's, and middleware that acts after Next
// never gets a response out.
func TestNoResponseBefore101(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{}, nil, func(app *fiber.App, b *Bridge) {
		app.Use(func(c *fiber.Ctx) error {
			err := c.Next()
			c.Set("X-After-Next", "1")
			c.Status(http.StatusTeapot)
			return err
		})
		app.Get("/echo", b.Handler(echo))
	})
	c := rawDial(t, s.addr)
	msg := clientFrame(1, []byte("after the 101"))
	if _, err := io.WriteString(c, upgradeRequest(s.addr, "/echo")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line != "HTTP/1.1 101 Switching Protocols\r\n" {
		t.Fatalf("first line %q, want the 101", line)
	}
	var head strings.Builder
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "\r\n" {
			break
		}
		head.WriteString(l)
	}
	if !strings.Contains(head.String(), "Sec-Websocket-Accept: "+testAccept) || strings.Contains(head.String(), "X-After-Next") {
		t.Fatalf("101 headers:\n%s", head.String())
	}
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	// Nothing else came between the 101 and the echo.
	op, p, err := readMessage(br)
	if err != nil || op != 1 || string(p) != "after the 101" {
		t.Fatalf("echo: opcode %d %q %v", op, p, err)
	}
}

// Point 3 of the note: the *http.Request is copied in the fiber handler,
// before the hijack, because fiber recycles its Ctx before the callback runs.
// Many concurrent upgrades (and plain requests churning fiber's and
// fasthttp's pools meanwhile) each see exactly their own request. The app
// is not Immutable here: the copy must not depend on it.
func TestRequestCopy(t *testing.T) {
	t.Parallel()
	type seen struct {
		Method, Path, Query, Host, RequestURI, RemoteAddr string
		Client, Long, HostHeader                          string
		Proto                                             string
		TLS, HasCtx                                       bool
	}
	// Generous timeouts: 100 handshakes and the churn at once can take
	// fasthttp more than 1 s to read under the race detector (it answers
	// 408), and timeouts are not the point here.
	config := func(cfg *fiber.Config) {
		cfg.Immutable = false
		cfg.ReadTimeout, cfg.WriteTimeout, cfg.IdleTimeout = 10*time.Second, 10*time.Second, 10*time.Second
	}
	s := startServer(t, Options{}, config, func(app *fiber.App, b *Bridge) {
		app.Get("/ws/:id", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
			// Let fiber and fasthttp reuse what served this request.
			time.Sleep(30 * time.Millisecond)
			v := seen{
				Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Host: r.Host, RequestURI: r.RequestURI,
				RemoteAddr: r.RemoteAddr, Client: r.Header.Get("X-Client"), Long: r.Header.Get("X-Long"),
				HostHeader: r.Header.Get("Host"), Proto: r.Proto, TLS: r.TLS != nil, HasCtx: r.Context() == ctx,
			}
			p, _ := json.Marshal(v)
			c.Write(ctx, websocket.MessageText, p)
			c.Read(ctx)
		}))
		app.Get("/churn", func(c *fiber.Ctx) error {
			return c.SendString(c.Get("X-Client") + c.Get("X-Long"))
		})
	})

	const clients = 100
	churnClient := &http.Client{Transport: &http.Transport{}}
	// Unused keep-alive connections would hold fiber's shutdown.
	defer churnClient.CloseIdleConnections()
	stopChurn := make(chan struct{})
	var churn sync.WaitGroup
	for i := range 8 {
		churn.Add(1)
		go func() {
			defer churn.Done()
			for n := 0; ; n++ {
				select {
				case <-stopChurn:
					return
				default:
				}
				req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/churn?x=%d", s.addr, n), nil)
				req.Header.Set("X-Client", fmt.Sprintf("churn-%d-%d", i, n))
				req.Header.Set("X-Long", strings.Repeat("z", 900))
				resp, err := churnClient.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}

	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var local atomic.Value
			dialer := &net.Dialer{}
			client := &http.Client{Transport: &http.Transport{
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := dialer.DialContext(ctx, network, addr)
					if err == nil {
						local.Store(c.LocalAddr().String())
					}
					return c, err
				},
			}}
			id := fmt.Sprintf("client-%03d", i)
			long := strings.Repeat(string(rune('a'+i%26)), 500+i)
			c, _, err := websocket.Dial(ctx, s.url(fmt.Sprintf("/ws/%d?n=%d&id=%s", i, i, id)), &websocket.DialOptions{
				HTTPClient: client,
				HTTPHeader: http.Header{"X-Client": {id}, "X-Long": {long}},
			})
			if err != nil {
				errs <- fmt.Errorf("%s: dial: %w", id, err)
				return
			}
			defer c.CloseNow()
			_, p, err := c.Read(ctx)
			if err != nil {
				errs <- fmt.Errorf("%s: read: %w", id, err)
				return
			}
			var got seen
			if err := json.Unmarshal(p, &got); err != nil {
				errs <- fmt.Errorf("%s: %w", id, err)
				return
			}
			want := seen{
				Method: "GET", Path: fmt.Sprintf("/ws/%d", i), Query: fmt.Sprintf("n=%d&id=%s", i, id), Host: s.addr,
				RequestURI: fmt.Sprintf("/ws/%d?n=%d&id=%s", i, i, id), RemoteAddr: local.Load().(string),
				Client: id, Long: long, Proto: "HTTP/1.1", HasCtx: true,
			}
			if got != want {
				errs <- fmt.Errorf("%s: fn saw\n%+v\nwant\n%+v", id, got, want)
			}
			c.Close(websocket.StatusNormalClosure, "")
		}()
	}
	wg.Wait()
	close(stopChurn)
	churn.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Point 4 of the note: fasthttp's hijacked conn ignores Close, so the bridge
// needs the real connection from its UnsafeConn method. This fails if
// fasthttp's wrapper loses that method.
func TestHijackedConnHasUnsafeConn(t *testing.T) {
	t.Parallel()
	type result struct {
		ok         bool
		wrapper    string
		underlying string
	}
	got := make(chan result, 1)
	s := startServer(t, Options{}, nil, func(app *fiber.App, b *Bridge) {
		app.Get("/raw", func(c *fiber.Ctx) error {
			c.Context().HijackSetNoResponse(true)
			c.Context().Hijack(func(nc net.Conn) {
				u, ok := nc.(unsafeConner)
				r := result{ok: ok, wrapper: fmt.Sprintf("%T", nc)}
				if ok {
					r.underlying = fmt.Sprintf("%T", u.UnsafeConn())
				}
				got <- r
			})
			return nil
		})
	})
	c := rawDial(t, s.addr)
	io.WriteString(c, "GET /raw HTTP/1.1\r\nHost: "+s.addr+"\r\n\r\n")
	select {
	case r := <-got:
		if !r.ok {
			t.Fatalf("fasthttp's hijacked conn %s has no UnsafeConn() net.Conn: the bridge cannot close websockets any more", r.wrapper)
		}
		if r.underlying != "*net.TCPConn" {
			t.Fatalf("UnsafeConn returned a %s, want the *net.TCPConn the listener accepted", r.underlying)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the hijack callback did not run")
	}
}

// Point 4 of the note: because the bridge hands coder/websocket the real
// connection, CloseNow and an ended context unblock a pending Read on the
// server even when the client stays silent.
func TestCloseUnblocksRead(t *testing.T) {
	t.Parallel()
	// The clients stay connected and silent: only CloseNow or the
	// context can end these Reads. Without them a Read blocks until the
	// test ends, so the generous limits below fail such a run and never
	// a slow one.
	closeNow := make(chan error, 1)
	ctxEnd := make(chan error, 1)
	s := startServer(t, Options{}, nil, func(app *fiber.App, b *Bridge) {
		app.Get("/closenow", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
			done := make(chan error, 1)
			go func() {
				_, _, err := c.Read(context.Background())
				done <- err
			}()
			// Most often the Read is blocked by now; when it is not, it
			// starts on a closed connection, which must fail as well.
			time.Sleep(100 * time.Millisecond)
			c.CloseNow()
			select {
			case err := <-done:
				closeNow <- err
			case <-time.After(30 * time.Second):
				closeNow <- errors.New("Read still blocked 30 s after CloseNow")
			}
		}))
		app.Get("/deadline", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
			rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			_, _, err := c.Read(rctx)
			ctxEnd <- err
		}))
	})
	s.dial(t, "/closenow", nil)
	s.dial(t, "/deadline", nil)
	for name, ch := range map[string]chan error{"CloseNow": closeNow, "context deadline": ctxEnd} {
		select {
		case err := <-ch:
			if err == nil {
				t.Errorf("%s: Read returned no error", name)
			}
		case <-time.After(60 * time.Second):
			t.Errorf("%s: the handler did not finish", name)
		}
	}
	waitFor(t, "Active() == 0", 5*time.Second, func() bool { return s.bridge.Active() == 0 })
}

// fakeHijacked stands for fasthttp's hijacked conn (it has UnsafeConn).
type fakeHijacked struct{ net.Conn }

func (f fakeHijacked) UnsafeConn() net.Conn { return f.Conn }

func testRequest(t *testing.T) *http.Request {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(upgradeRequest("example.test", "/ws"))))
	if err != nil {
		t.Fatal(err)
	}
	r.RemoteAddr = "192.0.2.1:1234"
	return r
}

// serveOnPipe runs b.serve on one end of a pipe and returns the answer read
// from the other end.
func serveOnPipe(t *testing.T, b *Bridge, wrap func(net.Conn) net.Conn) *http.Response {
	t.Helper()
	server, client := net.Pipe()
	defer client.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		b.serve(wrap(server), testRequest(t), func(ctx context.Context, c *websocket.Conn, r *http.Request) {
			t.Error("fn ran")
		})
	}()
	client.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return")
	}
	return resp
}

// Point 4 of the note: a hijacked conn without UnsafeConn is refused with a
// 500 (and logged) rather than served with a Close that does nothing.
func TestNoUnsafeConnRefused(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	b := New(Options{Logger: slogTo(logs)})
	resp := serveOnPipe(t, b, func(c net.Conn) net.Conn { return c })
	if resp.StatusCode != http.StatusInternalServerError || !resp.Close {
		t.Fatalf("status %d, Connection: close %v; want 500, true", resp.StatusCode, resp.Close)
	}
	if !strings.Contains(logs.String(), "UnsafeConn") {
		t.Fatalf("not logged: %q", logs.String())
	}
}

// Point 5 of the note: a client that pipelines its first frames with the
// upgrade request; fasthttp has some of them in its buffer at the hijack.
// The bridge must hand them over before the rest, in order: a small frame,
// then one large enough to be cut between fasthttp's 4 KiB buffer and the
// socket.
func TestPipelinedFirstFrame(t *testing.T) {
	t.Parallel()
	s := echoServer(t, Options{})
	large := bytes.Repeat([]byte("0123456789abcdef"), 400) // 6400 bytes
	frames := append(clientFrame(1, []byte("pipelined")), clientFrame(2, large)...)
	c, br := rawHandshake(t, s.addr, "/echo", frames)
	op, p, err := readMessage(br)
	if err != nil || op != 1 || string(p) != "pipelined" {
		t.Fatalf("first echo: opcode %d %q %v", op, p, err)
	}
	op, p, err = readMessage(br)
	if err != nil || op != 2 || !bytes.Equal(p, large) {
		t.Fatalf("second echo: opcode %d, %d bytes, %v", op, len(p), err)
	}
	// And the connection goes on normally.
	c.Write(clientFrame(1, []byte("then")))
	if op, p, err = readMessage(br); err != nil || string(p) != "then" {
		t.Fatalf("third echo: opcode %d %q %v", op, p, err)
	}
	c.Write(clientFrame(8, []byte{0x03, 0xe8}))
	if op, p, err = readMessage(br); err != nil || op != 8 || closeCode(p) != websocket.StatusNormalClosure {
		t.Fatalf("close: opcode %d %v %v", op, p, err)
	}
}

// Point 6 of the note: every answer other than 101 says Connection: close,
// and the connection is closed after it.
func TestNon101AnswersClose(t *testing.T) {
	t.Parallel()
	s := echoServer(t, Options{})
	for _, tc := range []struct {
		name    string
		request string
		status  int
	}{
		{"plain GET", "GET /echo HTTP/1.1\r\nHost: " + s.addr + "\r\n\r\n", http.StatusUpgradeRequired},
		{"plain GET, keep-alive asked", "GET /echo HTTP/1.1\r\nHost: " + s.addr + "\r\nConnection: keep-alive\r\n\r\n", http.StatusUpgradeRequired},
		{"HTTP/1.0", strings.Replace(upgradeRequest(s.addr, "/echo"), "HTTP/1.1", "HTTP/1.0", 1), http.StatusUpgradeRequired},
		{"wrong version", strings.Replace(upgradeRequest(s.addr, "/echo"), "Version: 13", "Version: 8", 1), http.StatusBadRequest},
		{"no key", strings.Replace(upgradeRequest(s.addr, "/echo"), "Sec-WebSocket-Key: "+testKey+"\r\n", "", 1), http.StatusBadRequest},
		{"cross origin", upgradeRequest(s.addr, "/echo", "Origin: http://evil.example"), http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, closed := roundTrip(t, s.addr, tc.request)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tc.status, body)
			}
			// net/http's reader turns Connection: close into resp.Close.
			if !resp.Close || !closed {
				t.Fatalf("Connection: close %v, connection closed %v; want true, true", resp.Close, closed)
			}
		})
	}
	waitFor(t, "Active() == 0", 5*time.Second, func() bool { return s.bridge.Active() == 0 })
	if !strings.Contains(s.logs.String(), "upgrade refused") {
		t.Errorf("refusals not logged: %s", s.logs.String())
	}

	t.Run("503 during shutdown", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.bridge.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		resp, body, closed := roundTrip(t, s.addr, upgradeRequest(s.addr, "/echo"))
		if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || !closed {
			t.Fatalf("status %d, Connection: close %v, closed %v; want 503, true, true; body %q", resp.StatusCode, resp.Close, closed, body)
		}
		// The hijack callback can start after Shutdown: it answers 503 too.
		resp = serveOnPipe(t, s.bridge, func(c net.Conn) net.Conn { return fakeHijacked{c} })
		if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
			t.Fatalf("late hijack: status %d, Connection: close %v; want 503, true", resp.StatusCode, resp.Close)
		}
	})
}

// Point 7 of the note: fiber's shutdown does not see hijacked connections;
// Bridge.Shutdown closes them with 1001, waits for the handlers, and answers
// later upgrades with 503.
func TestShutdown(t *testing.T) {
	t.Parallel()
	t.Run("fiber shutdown alone leaves websockets running", func(t *testing.T) {
		t.Parallel()
		s := echoServer(t, Options{})
		c := s.dial(t, "/echo", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.app.ShutdownWithTimeout(2 * time.Second); err != nil {
			t.Fatalf("fiber shutdown: %v", err)
		}
		if err := c.Write(ctx, websocket.MessageText, []byte("still there?")); err != nil {
			t.Fatal(err)
		}
		if _, p, err := c.Read(ctx); err != nil || string(p) != "still there?" {
			t.Fatalf("after fiber's shutdown: %q %v; the websocket should still echo", p, err)
		}
		if n := s.bridge.Active(); n != 1 {
			t.Fatalf("Active() = %d, want 1", n)
		}
		read := make(chan error, 1)
		go func() { _, _, err := c.Read(ctx); read <- err }()
		if err := s.bridge.Shutdown(ctx); err != nil {
			t.Fatalf("bridge shutdown: %v", err)
		}
		if err := <-read; websocket.CloseStatus(err) != websocket.StatusGoingAway {
			t.Fatalf("client read %v, want close status 1001", err)
		}
		if n := s.bridge.Active(); n != 0 {
			t.Fatalf("Active() = %d after Shutdown, want 0", n)
		}
	})

	t.Run("1001, waits for handlers, then 503", func(t *testing.T) {
		t.Parallel()
		var slowDone atomic.Bool
		var pushed atomic.Int64
		// The slow handler says when its ctx ended and then waits for
		// release, so that the test sees Shutdown still waiting for it.
		slowCancelled, release := make(chan struct{}), make(chan struct{})
		s := startServer(t, Options{}, nil, func(app *fiber.App, b *Bridge) {
			// echo reads with ctx: the same as CloseRead below.
			app.Get("/echo", b.Handler(echo))
			// The usual pattern for pushing (web's live socket): CloseRead
			// with ctx, then select on the context it returns. The
			// CloseRead reader drops the connection without a close frame
			// as soon as ctx ends, so this gets its 1001 only because the
			// bridge sends it before cancelling ctx.
			app.Get("/push", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
				ctx = c.CloseRead(ctx)
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						c.Close(websocket.StatusGoingAway, "bye")
						return
					case <-tick.C:
						if c.Write(ctx, websocket.MessageText, []byte("tick")) == nil {
							pushed.Add(1)
						}
					}
				}
			}))
			// A handler that returns only when released after its ctx ended.
			app.Get("/slow", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
				<-ctx.Done()
				close(slowCancelled)
				<-release
				slowDone.Store(true)
			}))
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var clients []*websocket.Conn
		for range 3 {
			clients = append(clients, s.dial(t, "/echo", nil))
		}
		clients = append(clients, s.dial(t, "/push", nil), s.dial(t, "/slow", nil))
		statuses := make(chan websocket.StatusCode, len(clients))
		for _, c := range clients {
			go func() {
				for {
					if _, _, err := c.Read(ctx); err != nil {
						statuses <- websocket.CloseStatus(err)
						return
					}
				}
			}()
		}
		waitFor(t, "all connections open", 5*time.Second, func() bool { return s.bridge.Active() == len(clients) && pushed.Load() > 0 })

		shutdown := make(chan error, 1)
		go func() { shutdown <- s.bridge.Shutdown(ctx) }()
		select {
		case <-slowCancelled:
		case <-ctx.Done():
			t.Fatal("Shutdown did not cancel the slow handler's ctx")
		}
		// Every client saw its 1001 (the bridge's close handshake does
		// not need the handler) and every other handler returned: still
		// Shutdown waits for the slow handler.
		for range clients {
			if code := <-statuses; code != websocket.StatusGoingAway {
				t.Errorf("a client saw close status %v, want 1001 (going away)", code)
			}
		}
		waitFor(t, "only the slow handler left", 5*time.Second, func() bool { return s.bridge.Active() == 1 })
		select {
		case err := <-shutdown:
			t.Fatalf("Shutdown returned (%v) while a handler had not", err)
		default:
		}
		close(release)
		if err := <-shutdown; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if !slowDone.Load() {
			t.Fatal("Shutdown returned before the slow handler")
		}
		if n := s.bridge.Active(); n != 0 {
			t.Fatalf("Active() = %d after Shutdown, want 0", n)
		}
		_, resp, err := websocket.Dial(ctx, s.url("/echo"), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("upgrade after Shutdown: %v, %v; want 503", resp, err)
		}
		if !resp.Close {
			t.Errorf("503 without Connection: close: %v", resp.Header)
		}
		if err := s.bridge.Shutdown(ctx); err != nil {
			t.Fatalf("second Shutdown: %v", err)
		}
	})

	t.Run("stuck handlers are force-closed when ctx ends", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		readerReturned := make(chan error, 1)
		s := startServer(t, Options{}, nil, func(app *fiber.App, b *Bridge) {
			// Ignores ctx and reads forever.
			app.Get("/deaf", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
				_, _, err := c.Read(context.Background())
				readerReturned <- err
			}))
			// Ignores everything.
			app.Get("/blocked", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
				<-release
			}))
		})
		defer close(release)
		// A client that never answers the close handshake.
		deaf, deafReader := rawHandshake(t, s.addr, "/deaf", nil)
		blocked := s.dial(t, "/blocked", nil)
		blockedRead := make(chan error, 1)
		go func() { _, _, err := blocked.Read(context.Background()); blockedRead <- err }()
		waitFor(t, "both open", 5*time.Second, func() bool { return s.bridge.Active() == 2 })

		// Shutdown's ctx ends when the test says: first Shutdown must be
		// seen waiting, with both handlers stuck.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		shutdown := make(chan error, 1)
		go func() { shutdown <- s.bridge.Shutdown(ctx) }()
		// Both clients get the 1001 first; the blocked one answers the
		// close handshake, the deaf one does not.
		op, p, err := readMessage(deafReader)
		if err != nil || op != 8 || closeCode(p) != websocket.StatusGoingAway {
			t.Fatalf("deaf client: opcode %d %v %v; want a close frame with 1001", op, p, err)
		}
		select {
		case err := <-blockedRead:
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Errorf("blocked client: %v, want 1001", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the blocked handler's client was not closed")
		}
		// The blocked handler cannot return before release, so Shutdown
		// cannot have returned either.
		select {
		case err := <-shutdown:
			t.Fatalf("Shutdown returned (%v) before its ctx ended, with a handler stuck", err)
		default:
		}
		cancel()
		select {
		case err := <-shutdown:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Shutdown = %v, want its ctx's error", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Shutdown did not return when its ctx ended")
		}
		if logs := s.logs.String(); !strings.Contains(logs, "shutdown timed out; closed the remaining websocket connections") {
			t.Errorf("the force close was not logged: %s", logs)
		}
		// The deaf handler's Read ends (the force close ends it; so, 5 s
		// after the 1001, does coder/websocket's own close handshake
		// timeout, which is why the test does not tell them apart).
		select {
		case <-readerReturned:
		case <-time.After(10 * time.Second):
			t.Fatal("the deaf handler's Read was not unblocked by the force close")
		}
		// The deaf client's connection ended after the close frame.
		deaf.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := deafReader.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Fatalf("deaf client after the close frame: %v, want the connection closed", err)
		}
		waitFor(t, "Active() == 1 while one handler is still blocked", 3*time.Second, func() bool { return s.bridge.Active() == 1 })
		if err := s.bridge.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("second Shutdown with an ended ctx = %v, want its error", err)
		}
		release <- struct{}{}
		waitFor(t, "Active() == 0", 5*time.Second, func() bool { return s.bridge.Active() == 0 })
		ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel2()
		if err := s.bridge.Shutdown(ctx2); err != nil {
			t.Fatalf("Shutdown once every handler returned: %v", err)
		}
	})
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// Point 8 of the note: a panic in fn is recovered (fasthttp's hijack
// goroutine would let it end the process) and logged, the connection is
// closed with 1011, and the server keeps serving.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{}, nil, func(app *fiber.App, b *Bridge) {
		app.Get("/echo", b.Handler(echo))
		app.Get("/panic", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
			c.Write(ctx, websocket.MessageText, []byte("about to panic"))
			panic("boom in a handler")
		}))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		c := s.dial(t, "/panic", nil)
		if _, p, err := c.Read(ctx); err != nil || string(p) != "about to panic" {
			t.Fatalf("first message: %q %v", p, err)
		}
		if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusInternalError {
			t.Fatalf("after the panic the client read %v, want close status 1011", err)
		}
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "panic in a websocket handler") || !strings.Contains(logs, "boom in a handler") {
		t.Fatalf("panic not logged: %s", logs)
	}
	c := s.dial(t, "/echo", nil)
	if err := c.Write(ctx, websocket.MessageText, []byte("alive")); err != nil {
		t.Fatal(err)
	}
	if _, p, err := c.Read(ctx); err != nil || string(p) != "alive" {
		t.Fatalf("echo after the panics: %q %v", p, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "Active() == 0", 5*time.Second, func() bool { return s.bridge.Active() == 0 })
}

// 200 concurrent clients, all open at once, each receiving 50 messages
// once fiber's idle timeout has cut a keep-alive connection opened after
// the last handshake: the websockets outlive it. ReadTimeout is off so
// that a slow machine, reading the burst of handshakes, cannot answer
// 408: the handshakes are what this test is for, the timeouts are
// TestOutlivesFiberTimeouts'.
func TestManyClients(t *testing.T) {
	t.Parallel()
	const (
		clients  = 200
		messages = 50
	)
	var (
		arrived    atomic.Int64
		openAtOnce atomic.Int64
		allOpen    = make(chan struct{})
		idleCut    = make(chan struct{})
	)
	config := func(cfg *fiber.Config) { cfg.ReadTimeout = 0 }
	s := startServer(t, Options{}, config, func(app *fiber.App, b *Bridge) {
		app.Get("/plain", func(c *fiber.Ctx) error { return c.SendString("plain") })
		app.Get("/push/:id", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
			if arrived.Add(1) == clients {
				// No handler returns before allOpen: every one of
				// them counts.
				openAtOnce.Store(int64(b.Active()))
				close(allOpen)
			}
			ctx = c.CloseRead(ctx)
			for _, ch := range []chan struct{}{allOpen, idleCut} {
				select {
				case <-ctx.Done():
					return
				case <-ch:
				}
			}
			id := strings.TrimPrefix(r.URL.Path, "/push/")
			for i := range messages {
				if err := c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, "%s %d", id, i)); err != nil {
					return
				}
			}
			c.Close(websocket.StatusNormalClosure, "done")
		}))
	})
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	handshakes := make(chan struct{}, 20)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			handshakes <- struct{}{}
			c, _, err := websocket.Dial(ctx, s.url(fmt.Sprintf("/push/%d", i)), nil)
			<-handshakes
			if err != nil {
				errs <- fmt.Errorf("client %d: dial: %w", i, err)
				return
			}
			defer c.CloseNow()
			for j := range messages {
				_, p, err := c.Read(ctx)
				if err != nil {
					errs <- fmt.Errorf("client %d: message %d: %w", i, j, err)
					return
				}
				if want := fmt.Sprintf("%d %d", i, j); string(p) != want {
					errs <- fmt.Errorf("client %d: got %q, want %q", i, p, want)
					return
				}
			}
			if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				errs <- fmt.Errorf("client %d: end: %v, want a normal closure", i, err)
			}
		}()
	}
	select {
	case <-allOpen:
		// Every websocket has been silent since before this keep-alive
		// connection's request.
		idleConnectionCut(t, s.addr, "/plain")
		close(idleCut)
	case <-waitGroupDone(&wg):
		t.Error("the clients ended before all of them were open")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := openAtOnce.Load(); n != clients {
		t.Errorf("Active() = %d once the last client was in, want %d open at once", n, clients)
	}
	waitFor(t, "Active() == 0", 5*time.Second, func() bool { return s.bridge.Active() == 0 })
}

// waitGroupDone returns a channel closed once wg's count is zero.
func waitGroupDone(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// A websocket outlives fiber's ReadTimeout, WriteTimeout and IdleTimeout
// (testTimeout) while silent in both directions: it is still open after
// a connection opened later, stalled halfway through its request, and
// one left idle after a request, were cut by those timeouts.
func TestOutlivesFiberTimeouts(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{}, nil, func(app *fiber.App, b *Bridge) {
		app.Get("/echo", b.Handler(echo))
		app.Get("/plain", func(c *fiber.Ctx) error { return c.SendString("plain") })
	})
	c := s.dial(t, "/echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ping := func(when string) {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if _, p, err := c.Read(ctx); err != nil || string(p) != "ping" {
			t.Fatalf("%s: %q %v", when, p, err)
		}
	}
	ping("at first")
	// From here the websocket is silent.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); stalledRequestCut(t, s.addr) }()
	go func() { defer wg.Done(); idleConnectionCut(t, s.addr, "/plain") }()
	wg.Wait()
	if t.Failed() {
		return
	}
	ping("after fiber's timeouts cut newer connections")
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
}

// sentinelDeadline bounds how long a sentinel connection waits for the
// server to cut it: a failure bound, far above any timeout of the tests.
const sentinelDeadline = 30 * time.Second

// stalledRequestCut opens a connection that sends half a request and
// then nothing, and returns once the server closed it (fiber's
// ReadTimeout).
func stalledRequestCut(t *testing.T, addr string) {
	t.Helper()
	c := rawDial(t, addr)
	c.SetDeadline(time.Now().Add(sentinelDeadline))
	if _, err := io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: "+addr+"\r\n"); err != nil {
		t.Error(err)
		return
	}
	if _, err := io.Copy(io.Discard, c); err != nil && !isReset(err) {
		t.Errorf("a stalled request: %v, want the server to close the connection", err)
	}
}

// idleConnectionCut sends a request for path, reads the answer, keeps the
// connection alive and idle, and returns once the server closed it
// (fiber's IdleTimeout).
func idleConnectionCut(t *testing.T, addr, path string) {
	t.Helper()
	c := rawDial(t, addr)
	c.SetDeadline(time.Now().Add(sentinelDeadline))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Error(err)
		return
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Error(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Errorf("GET %s: %s, Connection: close %v; want a 200 that keeps the connection", path, resp.Status, resp.Close)
		return
	}
	if n, err := io.Copy(io.Discard, br); (err != nil && !isReset(err)) || n != 0 {
		t.Errorf("an idle keep-alive connection: %d bytes, %v; want the server to close it", n, err)
	}
}

// A client that drops the TCP connection without a close frame: fn's Read
// fails and Active goes back to 0.
func TestAbruptDisconnect(t *testing.T) {
	t.Parallel()
	readErrs := make(chan error, 4)
	s := startServer(t, Options{}, nil, func(app *fiber.App, b *Bridge) {
		app.Get("/read", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					readErrs <- err
					return
				}
			}
		}))
	})
	check := func(t *testing.T) {
		t.Helper()
		select {
		case err := <-readErrs:
			if websocket.CloseStatus(err) != -1 {
				t.Fatalf("fn's Read: %v, want an error without a close status", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("fn's Read did not fail")
		}
		waitFor(t, "Active() == 0", 5*time.Second, func() bool { return s.bridge.Active() == 0 })
	}
	t.Run("CloseNow", func(t *testing.T) {
		c := s.dial(t, "/read", nil)
		waitFor(t, "Active() == 1", 5*time.Second, func() bool { return s.bridge.Active() == 1 })
		c.CloseNow()
		check(t)
	})
	t.Run("FIN mid-frame", func(t *testing.T) {
		c, _ := rawHandshake(t, s.addr, "/read", nil)
		waitFor(t, "Active() == 1", 5*time.Second, func() bool { return s.bridge.Active() == 1 })
		frame := clientFrame(1, []byte("cut short"))
		c.Write(frame[:5])
		c.Close()
		check(t)
	})
	t.Run("RST", func(t *testing.T) {
		c, _ := rawHandshake(t, s.addr, "/read", nil)
		waitFor(t, "Active() == 1", 5*time.Second, func() bool { return s.bridge.Active() == 1 })
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
		check(t)
	})
}

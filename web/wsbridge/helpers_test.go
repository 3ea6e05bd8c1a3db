package wsbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gofiber/fiber/v2"
)

// testTimeout is fiber's read, write and idle timeout in the test apps:
// websockets must outlive it.
const testTimeout = time.Second

// syncBuffer is a log destination safe for concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testServer is a fiber app on a loopback port with a Bridge.
type testServer struct {
	app    *fiber.App
	bridge *Bridge
	addr   string
	logs   *syncBuffer
}

// startServer starts a fiber app configured like web's (Immutable, read,
// write and idle timeouts, here of testTimeout) unless config changes it,
// with the routes that routes registers. Cleanup shuts down the bridge and
// the app.
func startServer(t *testing.T, opts Options, config func(*fiber.Config), routes func(app *fiber.App, b *Bridge)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, ln, opts, config, routes)
}

// startServerOn is startServer on the listener ln.
func startServerOn(t *testing.T, ln net.Listener, opts Options, config func(*fiber.Config), routes func(app *fiber.App, b *Bridge)) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = slogTo(logs)
	}
	b := New(opts)
	cfg := fiber.Config{
		DisableStartupMessage: true,
		Immutable:             true,
		ReadTimeout:           testTimeout,
		WriteTimeout:          testTimeout,
		IdleTimeout:           testTimeout,
	}
	if config != nil {
		config(&cfg)
	}
	app := fiber.New(cfg)
	routes(app, b)
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.Shutdown(ctx)
		app.ShutdownWithContext(ctx)
		select {
		case <-served:
		case <-ctx.Done():
			t.Errorf("the app did not stop")
		}
	})
	return &testServer{app: app, bridge: b, addr: ln.Addr().String(), logs: logs}
}

func (s *testServer) url(path string) string { return "ws://" + s.addr + path }

// dial opens a websocket that the test's cleanup closes.
func (s *testServer) dial(t *testing.T, path string, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, s.url(path), opts)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("dial %s: status %d", path, resp.StatusCode)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// echo is a handler that sends back what it reads, until an error.
func echo(ctx context.Context, c *websocket.Conn, r *http.Request) {
	for {
		typ, p, err := c.Read(ctx)
		if err != nil {
			return
		}
		if err := c.Write(ctx, typ, p); err != nil {
			return
		}
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testKey is the handshake key of RFC 6455, section 1.3, and testAccept
// the answer it expects.
const (
	testKey    = "dGhlIHNhbXBsZSBub25jZQ=="
	testAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
)

// upgradeRequest returns the text of a websocket handshake request, with
// extra header lines ("Name: value").
func upgradeRequest(addr, path string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n", path, addr, testKey)
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// rawDial opens a TCP connection to addr that the test's cleanup closes.
func rawDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// rawHandshake does a websocket handshake by hand, sending first (in the
// same write as the request) what follows, and returns the connection and
// its reader, positioned after the 101's headers.
func rawHandshake(t *testing.T, addr, path string, follows []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	c := rawDial(t, addr)
	if _, err := c.Write(append([]byte(upgradeRequest(addr, path)), follows...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != testAccept {
		t.Fatalf("handshake: %s, Sec-WebSocket-Accept %q", resp.Status, resp.Header.Get("Sec-WebSocket-Accept"))
	}
	return c, br
}

// roundTrip sends request on a new connection and returns the answer and
// its body, and whether the server closed the connection after it.
func roundTrip(t *testing.T, addr, request string) (resp *http.Response, body string, closed bool) {
	t.Helper()
	c := rawDial(t, addr)
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = br.ReadByte()
	return resp, string(b), errors.Is(err, io.EOF)
}

// clientFrame returns a masked websocket frame with fin set.
func clientFrame(opcode byte, payload []byte) []byte {
	b := []byte{0x80 | opcode}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	key := [4]byte{0x12, 0x34, 0x56, 0x78}
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// readFrame reads one unmasked (server) frame.
func readFrame(r io.Reader) (fin bool, opcode byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, 0, nil, err
	}
	if h[1]&0x80 != 0 {
		return false, 0, nil, errors.New("masked server frame")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var e [2]byte
		if _, err := io.ReadFull(r, e[:]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(e[:]))
	case 127:
		var e [8]byte
		if _, err := io.ReadFull(r, e[:]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(e[:])
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(r, payload)
	return h[0]&0x80 != 0, h[0] & 0x0f, payload, err
}

// readMessage reads a data message (joining its fragments) or a close
// frame, whose opcode it returns.
func readMessage(r io.Reader) (opcode byte, payload []byte, err error) {
	for {
		fin, op, p, err := readFrame(r)
		if err != nil {
			return 0, nil, err
		}
		if op != 0 {
			opcode = op
		}
		payload = append(payload, p...)
		if fin || op == 8 {
			return opcode, payload, nil
		}
	}
}

// closeCode returns the status code of a close frame's payload.
func closeCode(payload []byte) websocket.StatusCode {
	if len(payload) < 2 {
		return websocket.StatusNoStatusRcvd
	}
	return websocket.StatusCode(binary.BigEndian.Uint16(payload))
}

// slogTo returns a logger writing text to w, debug level included.
func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

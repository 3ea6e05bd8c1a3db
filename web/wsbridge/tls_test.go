package wsbridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gofiber/fiber/v2"
)

// Over TLS: the request copy carries the TLS state (point 3), the real
// connection is the *tls.Conn (point 4), and pipelined frames already
// decrypted or buffered are handed over too (point 5).
func TestTLS(t *testing.T) {
	t.Parallel()
	// httptest's certificate is valid for 127.0.0.1.
	hts := httptest.NewTLSServer(nil)
	cert, leaf := hts.TLS.Certificates[0], hts.Certificate()
	hts.Close()
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	clientTLS := &tls.Config{RootCAs: roots}

	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := tls.NewListener(tcp, &tls.Config{Certificates: []tls.Certificate{cert}})
	type tlsSeen struct {
		TLS, Complete bool
		Version       uint16
		ServerName    string
	}
	s := startServerOn(t, ln, Options{}, nil, func(app *fiber.App, b *Bridge) {
		app.Get("/echo", b.Handler(echo))
		app.Get("/tls", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) {
			var v tlsSeen
			if r.TLS != nil {
				v = tlsSeen{TLS: true, Complete: r.TLS.HandshakeComplete, Version: r.TLS.Version, ServerName: r.TLS.ServerName}
			}
			p, _ := json.Marshal(v)
			c.Write(ctx, websocket.MessageText, p)
			echo(ctx, c, r)
		}))
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "wss://"+s.addr+"/tls", &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, p, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got tlsSeen
	if err := json.Unmarshal(p, &got); err != nil {
		t.Fatal(err)
	}
	if !got.TLS || !got.Complete || got.Version < tls.VersionTLS12 {
		t.Fatalf("fn saw TLS state %+v", got)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("over tls")); err != nil {
		t.Fatal(err)
	}
	if _, p, err := c.Read(ctx); err != nil || string(p) != "over tls" {
		t.Fatalf("echo: %q %v", p, err)
	}
	c.Close(websocket.StatusNormalClosure, "")

	// Pipelined frames over TLS.
	rc, err := tls.Dial("tcp", s.addr, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetDeadline(time.Now().Add(10 * time.Second))
	large := bytes.Repeat([]byte("tls-pipelined "), 700)
	req := append([]byte(upgradeRequest(s.addr, "/echo")), clientFrame(1, []byte("first"))...)
	req = append(req, clientFrame(2, large)...)
	if _, err := rc.Write(req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(rc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	if op, p, err := readMessage(br); err != nil || op != 1 || string(p) != "first" {
		t.Fatalf("first echo: %d %q %v", op, p, err)
	}
	if op, p, err := readMessage(br); err != nil || op != 2 || !bytes.Equal(p, large) {
		t.Fatalf("second echo: %d, %d bytes, %v", op, len(p), err)
	}
}

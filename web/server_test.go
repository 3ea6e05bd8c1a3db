package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/designer"
)

// testServer is a Server listening on a free loopback port, over a real
// pebble store in a temporary directory.
type testServer struct {
	t      *testing.T
	srv    *Server
	store  *designer.Store
	base   string // http://127.0.0.1:port
	client *http.Client
}

// start runs a server with cfg (Listen defaults to 127.0.0.1:0, Store to
// a fresh one) until the test ends.
func start(t *testing.T, cfg Config) *testServer {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Store == nil {
		store, err := designer.OpenStore(filepath.Join(t.TempDir(), "designs"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		cfg.Store = store
	}
	if cfg.Logger == nil && testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Listen(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Listen: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("Listen did not return after its context ended")
		}
	})
	_, port, _ := net.SplitHostPort(srv.Addr())
	return &testServer{
		t: t, srv: srv, store: cfg.Store, base: "http://127.0.0.1:" + port,
		client: &http.Client{
			Timeout:       30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// response is an answer, read.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) String() string { return string(r.body) }

// decode decodes the JSON body into v, failing the test if it is not.
func (r *response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer is not JSON (%v): %s", err, r.body)
	}
}

// apiErr decodes an error answer.
func (r *response) apiErr(t *testing.T) apiError {
	t.Helper()
	var e apiError
	r.decode(t, &e)
	if e.Error == "" {
		t.Errorf("error answer without an error message: %s", r.body)
	}
	if e.Problems == nil {
		t.Errorf(`error answer without "problems": %s`, r.body)
	}
	return e
}

// do sends a request; body, when not empty, goes as application/json
// unless headers (name, value pairs) set a Content-Type.
func (ts *testServer) do(method, path, body string, headers ...string) *response {
	ts.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.base+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := ts.client.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		ts.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return &response{status: res.StatusCode, header: res.Header, body: data}
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "designer", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestNewChecksConfig(t *testing.T) {
	store, err := designer.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no store", Config{Listen: "127.0.0.1:0"}, "Store is required"},
		{"all addresses without a token", Config{Listen: "0.0.0.0:0", Store: store}, "not a loopback address, without an auth token"},
		{"empty host without a token", Config{Listen: ":0", Store: store}, "not a loopback address"},
		{"IPv6 all addresses without a token", Config{Listen: "[::]:0", Store: store}, "not a loopback address"},
		{"bad address", Config{Listen: "nonsense", Store: store}, "nonsense"},
		{"negative body limit", Config{Listen: "127.0.0.1:0", Store: store, BodyLimit: -1}, "negative"},
		{"token with spaces", Config{Listen: "127.0.0.1:0", Store: store, AuthToken: "a b"}, "white space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("New succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Loopback needs no token; localhost is loopback.
	for _, listen := range []string{"127.0.0.1:0", "localhost:0"} {
		s, err := New(Config{Listen: listen, Store: store})
		if err != nil {
			t.Errorf("New(%s): %v", listen, err)
			continue
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close of a server that never served: %v", err)
		}
	}
}

// TestListenStopsOnCancel: Listen returns nil when its context ends, a
// request in flight finishes, and the port is free again.
func TestListenStopsOnCancel(t *testing.T) {
	store, err := designer.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := New(Config{Listen: "127.0.0.1:0", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Listen(ctx) }()
	res, err := http.Get("http://" + srv.Addr() + "/api/designs")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/designs: %s", res.Status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Listen did not return after its context ended")
	}
	ln, err := net.Listen("tcp", srv.Addr())
	if err != nil {
		t.Fatalf("the address is still taken after Listen returned: %v", err)
	}
	ln.Close()
	if _, err := http.Get("http://" + srv.Addr() + "/api/designs"); err == nil {
		t.Error("the server still answers after Listen returned")
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestURL(t *testing.T) {
	ts := start(t, Config{})
	if got := ts.srv.URL(); got != ts.base+"/" {
		t.Errorf("URL() = %q, want %q", got, ts.base+"/")
	}
	withToken := start(t, Config{AuthToken: "s3cret/+"})
	_, port, _ := net.SplitHostPort(withToken.srv.Addr())
	if got, want := withToken.srv.URL(), "http://127.0.0.1:"+port+"/?token=s3cret%2F%2B"; got != want {
		t.Errorf("URL() = %q, want %q", got, want)
	}
}

// lineColumnOf returns the line and column (1-based, characters) of the
// first occurrence of sub in s.
func lineColumnOf(t *testing.T, s, sub string) (int, int) {
	t.Helper()
	i := strings.Index(s, sub)
	if i < 0 {
		t.Fatalf("%q not in %q", sub, s)
	}
	return lineColumn([]byte(s), i)
}

func TestLineColumn(t *testing.T) {
	data := []byte("ab\ncdé\nf")
	for _, tc := range []struct{ off, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {7, 2, 4}, {8, 3, 1}, {100, 3, 2}, {-1, 1, 1},
	} {
		if l, c := lineColumn(data, tc.off); l != tc.line || c != tc.col {
			t.Errorf("lineColumn(%d) = %d:%d, want %d:%d", tc.off, l, c, tc.line, tc.col)
		}
	}
}

func TestWithVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{"version":1}`},
		{`{ }`, `{ "version":1}`},
		{`{"name":"x"}`, `{"name":"x","version":1}`},
		{"{\"name\":\"x\"}\n", `{"name":"x","version":1}`},
		{`{"version":2}`, `{"version":2}`},
		{`[1]`, `[1]`},
		{`{"name":`, `{"name":`},
	} {
		if got := string(withVersion([]byte(tc.in))); got != tc.want {
			t.Errorf("withVersion(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFieldOffset(t *testing.T) {
	body := []byte("{\"message\": \"x\",\n  \"design\" :  {\"a\": 1}, \"z\": [1]}")
	if got := fieldOffset(body, "design"); !bytes.HasPrefix(body[got:], []byte(`{"a"`)) {
		t.Errorf("fieldOffset(design) = %d, at %q", got, body[got:])
	}
	if got := fieldOffset(body, "z"); !bytes.HasPrefix(body[got:], []byte(`[1]`)) {
		t.Errorf("fieldOffset(z) = %d", got)
	}
	if got := fieldOffset(body, "missing"); got != -1 {
		t.Errorf("fieldOffset(missing) = %d, want -1", got)
	}
	if got := fieldOffset([]byte(`[1]`), "a"); got != -1 {
		t.Errorf("fieldOffset of a list = %d, want -1", got)
	}
}

// errorsAsHTTP is a compile-time check that errorf's result is an error.
var _ error = errors.Join(errorf(400, "x"))

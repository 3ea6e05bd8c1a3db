package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/chromedp/chromedp"
)

// buildBraid builds the braid binary once per test binary run.
var buildBraid = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "braid-e2e-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "braid")
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/braid")
	cmd.Dir = filepath.Dir(filepath.Dir(self))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building braid: %v\n%s", err, out)
	}
	return bin, nil
})

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServe runs `braid serve` on free loopback ports with a new data
// dir and returns its base URL once it answers.
func startServe(t *testing.T) string {
	t.Helper()
	return startServeWith(t, serveBrokerArgs(t)...)
}

// serveBrokerArgs are the flags that give a `braid serve` the test's
// broker: its embedded one on a free loopback port, or, when
// BRAID_TEST_KAFKA asks, the package's Apache Kafka cluster (brokertest),
// cleared of topics and groups when the test ends.
func serveBrokerArgs(t *testing.T) []string {
	t.Helper()
	if brokertest.OnKafka() {
		return []string{"--brokers", brokertest.Start(t, broker.Config{}).Bootstrap()}
	}
	return []string{"--broker-listen", freePort(t)}
}

// startServeWith runs `braid serve` with args on a free loopback port with
// a new data dir and returns its base URL once it answers.
func startServeWith(t *testing.T, args ...string) string {
	t.Helper()
	return startServeOn(t, loopback, "", args...).url
}

// serveProc is `braid serve` run as its own process on a fixed address
// and data dir, so that the test can stop it and start it again where it
// was.
type serveProc struct {
	t *testing.T
	// host is where it runs; token, when set, is its --auth-token.
	host             *netHost
	addr, dir, token string
	args             []string
	url              string
	cmd              *exec.Cmd
	logs             *strings.Builder
}

// startServeOn runs `braid serve` with args on a free port of host with a
// new data dir, and returns once it answers.
func startServeOn(t *testing.T, host *netHost, token string, args ...string) *serveProc {
	t.Helper()
	s := &serveProc{t: t, host: host, addr: host.addr(t), dir: t.TempDir(), token: token, args: args, logs: &strings.Builder{}}
	s.url = "http://" + s.addr
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("braid serve output:\n%s", s.logs.String())
		}
	})
	s.start()
	return s
}

// start runs the server and returns once it answers.
func (s *serveProc) start() {
	s.t.Helper()
	bin, err := buildBraid()
	if err != nil {
		s.t.Fatal(err)
	}
	// No state demo unless a test asks for one (its flag in s.args
	// comes later and wins): seeding it takes seconds.
	args := []string{"serve", "--listen", s.addr, "--data-dir", s.dir, "--state-demo-keys", "0"}
	if s.token != "" {
		args = append(args, "--auth-token", s.token)
	}
	cmd := s.host.command(bin, append(args, s.args...)...)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := s.get("/api/designs")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("braid serve did not answer on %s within 30 s: %v\n%s", s.url, err, s.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// get is a GET of the server's path, with its token.
func (s *serveProc) get(path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		return nil, err
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	return probeClient.Do(req)
}

// probeClient gives up on a request after 5 s: to a server behind a
// bridge that drops packets, one would otherwise wait for TCP's minutes.
// It dials the server itself: a proxy of the environment could not reach
// a test's private addresses.
var probeClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}

// stop interrupts the server, as Ctrl-C does, and waits for it to end;
// one that has not ended 10 s later is killed.
func (s *serveProc) stop() {
	if s.cmd == nil {
		return
	}
	ended := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(ended) }()
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-ended
	}
	s.cmd = nil
}

// chromiumPath returns Debian's chromium. Without it the test skips,
// unless CI is set. Under -short (make test-quick) browser tests skip.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium not found in PATH; run scripts/install-deps.sh"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser is a headless Chromium tab that keeps a screenshot of every
// step, written out when the test fails.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots []shot
	logs  []string
	mu    sync.Mutex
}

type shot struct {
	name string
	png  []byte
}

// newBrowser starts a tab in a window of 1600x1000 px.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	return newBrowserSized(t, 1600, 1000)
}

// newBrowserSized starts a tab in a window of width x height px (the
// page's viewport is the window less the browser's own bars).
func newBrowserSized(t *testing.T, width, height int) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		// The servers are the test's own, on loopback or a private
		// subnet no proxy of the environment reaches.
		chromedp.Flag("no-proxy-server", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t}
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(func(format string, args ...any) {
		b.mu.Lock()
		b.logs = append(b.logs, fmt.Sprintf(format, args...))
		b.mu.Unlock()
	}))
	b.ctx = ctx
	// The first Do starts the browser, and the browser lives as long as
	// that call's context: it gets the long-lived one, steps get timeouts.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b.saveShots()
		}
		cancelCtx()
		cancelAlloc()
	})
	return b
}

// step runs actions under a timeout and keeps a screenshot of the page
// after them; it fails the test on error.
func (b *browser) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.stepWithin(30*time.Second, name, actions...)
}

// stepWithin is step with its own time limit.
func (b *browser) stepWithin(timeout time.Duration, name string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	err := chromedp.Do(ctx, actions...)
	if png, serr := screenshot(b); serr == nil {
		b.shots = append(b.shots, shot{name: name, png: png})
	}
	if err != nil {
		b.t.Fatalf("step %q: %v", name, err)
	}
}

// screenshot captures the page, giving up after 10 s: a capture taken
// while the page navigates can otherwise hang until the test times out.
func screenshot(b *browser) ([]byte, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.CaptureScreenshot())
}

// saveShots writes the screenshots to the test's artifact directory
// (kept with go test -artifacts) or, without it, to a directory that
// outlives the test, and logs where.
func (b *browser) saveShots() {
	dir := b.t.ArtifactDir()
	if !artifactsKept() {
		var err error
		if dir, err = os.MkdirTemp("", "braid-e2e-"+strings.ReplaceAll(b.t.Name(), "/", "_")+"-"); err != nil {
			b.t.Logf("keeping screenshots: %v", err)
			return
		}
	}
	for i, s := range b.shots {
		name := filepath.Join(dir, fmt.Sprintf("%02d-%s.png", i+1, strings.ReplaceAll(s.name, " ", "-")))
		if err := os.WriteFile(name, s.png, 0o644); err != nil {
			b.t.Logf("writing %s: %v", name, err)
		}
	}
	b.t.Logf("screenshots of every step: %s", dir)
}

// artifactsKept reports whether go test was given -artifacts.
func artifactsKept() bool {
	for _, arg := range os.Args {
		if arg == "-test.artifacts" || strings.HasPrefix(arg, "-test.artifacts=") {
			return true
		}
	}
	return false
}

// serveOnReachableBroker runs braid serve with the demo on a broker the
// test can reach too: the package's Apache Kafka under BRAID_TEST_KAFKA,
// else the server's embedded broker on a free loopback port. It returns
// the server's URL and the broker's addresses.
func serveOnReachableBroker(t *testing.T) (url string, brokers []string) {
	t.Helper()
	var args []string
	if brokertest.OnKafka() {
		c := brokertest.Start(t, broker.Config{})
		args, brokers = []string{"--brokers", c.Bootstrap()}, c.Addrs()
	} else {
		addr := freePort(t)
		args, brokers = []string{"--broker-listen", addr}, []string{addr}
	}
	return startServeWith(t, args...), brokers
}

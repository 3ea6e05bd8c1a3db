package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process whose output is appended to a log file. A
// goroutine waits for it from the start, so that its exit is noticed
// whoever looks; done closes once it has exited and err holds Wait's
// result.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProc starts bin with args, appending its stdout and stderr to
// logPath after a line that says what was started, and copying its stdout
// to stdout as well when that is not nil.
func startProc(name, logPath string, stdout io.Writer, bin string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	fmt.Fprintf(f, "=== %s starting %s %s\n", time.Now().Format("15:04:05.000"), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if stdout != nil {
		cmd.Stdout = io.MultiWriter(f, stdout)
	}
	// Its own process group, so that a Ctrl-C of the driver reaches the
	// driver alone, which then stops the workers before the broker.
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		fmt.Fprintf(f, "=== %s %s exited: %v\n", time.Now().Format("15:04:05.000"), name, exitText(p.err))
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill stops p the way a crash does, with SIGKILL, and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stacks asks p, a stuck Go process, for its goroutines' stacks
// (SIGQUIT), waits up to 10 s for it to print them and exit, and returns
// from logPath those of its goroutines whose stack holds one of match
// (Braid's runtime, for a worker): what a "did not resume" needs to be
// understood, which the log's tail alone rarely says.
func (p *proc) stacks(logPath string, match ...string) string {
	if p == nil || quitSignal == nil || p.exited() {
		return ""
	}
	_ = p.cmd.Process.Signal(quitSignal)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", logPath, err)
	}
	var out strings.Builder
	for _, g := range strings.Split(string(b), "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && slices.ContainsFunc(match, func(m string) bool { return strings.Contains(g, m) }) {
			out.WriteString(g)
			out.WriteString("\n\n")
		}
	}
	return fmt.Sprintf("--- the goroutines of %s in %s when it was stuck\n%s", p.name, strings.Join(match, " or "), out.String())
}

// stop asks p to stop with SIGTERM and waits up to timeout; then it kills
// it. It returns p's exit error, or an error saying it had to be killed.
func (p *proc) stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.err
	case <-t.C:
		p.kill()
		return fmt.Errorf("%s did not stop within %v of SIGTERM and was killed", p.name, timeout)
	}
}

// broker is the `braid broker` process.
type broker struct {
	*proc
	addr    string
	logPath string
}

var listeningRE = regexp.MustCompile(`listening on (\S+)`)

// addrWatcher passes a process's stdout through and hands out the address
// of its first "listening on" line.
type addrWatcher struct {
	buf   []byte
	found bool
	addr  chan string
}

func (w *addrWatcher) Write(p []byte) (int, error) {
	if w.found {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if m := listeningRE.FindSubmatch(w.buf); m != nil {
		w.found = true
		w.addr <- string(m[1])
		w.buf = nil
	}
	return len(p), nil
}

// startBroker runs `braid broker` on listen (a free loopback port when
// empty) with its data in dataDir and the extra flags, and returns once it
// prints the address it listens on.
func startBroker(ctx context.Context, braid, listen, dataDir, logPath string, partitions int, extra ...string) (*broker, error) {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	w := &addrWatcher{addr: make(chan string, 1)}
	args := append([]string{"broker", "--listen", listen, "--data-dir", dataDir, "--partitions", fmt.Sprint(partitions)}, extra...)
	p, err := startProc("broker", logPath, w, braid, args...)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case addr := <-w.addr:
		return &broker{proc: p, addr: addr, logPath: logPath}, nil
	case <-p.done:
		err = fmt.Errorf("broker exited before listening: %s\n%s", exitText(p.err), tailFile(logPath, 20))
	case <-t.C:
		p.kill()
		err = fmt.Errorf("broker printed no address within 30 s\n%s", tailFile(logPath, 20))
	case <-ctx.Done():
		p.kill()
		err = ctx.Err()
	}
	return nil, fmt.Errorf("starting broker: %w", err)
}

// workers are the chaos application's worker processes: worker-1 to
// worker-N, each with its own state dir and log, restarted under the same
// instance id after a kill.
type workers struct {
	bin  string
	args []string // the flags every worker shares
	dir  string
	logs string
	// commitLogs makes each worker append a line per commit to its
	// commitLogPath.
	commitLogs bool
	mu         sync.Mutex
	procs      []*proc // nil while killed
}

// newWorkers returns o.Workers workers, none started, of the chaos
// application on the broker at bootstrap.
func newWorkers(o Options, bootstrap, dir, logs string, commitLogs bool) *workers {
	return &workers{
		bin: o.Worker,
		args: []string{"--brokers", bootstrap, "--app", AppID, "--guarantee", o.Guarantee.String(),
			"--standbys", fmt.Sprint(o.Standbys), "--commit-interval", o.CommitInterval.String(),
			"--session-timeout", o.SessionTimeout.String()},
		dir:        dir,
		logs:       logs,
		commitLogs: commitLogs,
		procs:      make([]*proc, o.Workers),
	}
}

func (ws *workers) name(i int) string { return fmt.Sprintf("worker-%d", i+1) }

func (ws *workers) logPath(i int) string { return filepath.Join(ws.logs, ws.name(i)+".log") }

func (ws *workers) commitLogPath(i int) string {
	return filepath.Join(ws.logs, ws.name(i)+".commits")
}

// start starts worker i, for the first time or after a kill.
func (ws *workers) start(i int) error {
	name := ws.name(i)
	args := append(slices.Clone(ws.args), "--instance", name, "--state-dir", filepath.Join(ws.dir, "state", name))
	if ws.commitLogs {
		args = append(args, "--commit-log", ws.commitLogPath(i))
	}
	p, err := startProc(name, ws.logPath(i), nil, ws.bin, args...)
	if err != nil {
		return err
	}
	ws.mu.Lock()
	ws.procs[i] = p
	ws.mu.Unlock()
	return nil
}

// startAll starts every worker.
func (ws *workers) startAll() error {
	for i := range ws.procs {
		if err := ws.start(i); err != nil {
			return err
		}
	}
	return nil
}

// kill kills worker i with SIGKILL, waits for it and returns its pid.
func (ws *workers) kill(i int) (int, error) {
	ws.mu.Lock()
	p := ws.procs[i]
	ws.procs[i] = nil
	ws.mu.Unlock()
	if p == nil {
		return 0, fmt.Errorf("killing %s: it is not running", ws.name(i))
	}
	if p.exited() {
		return 0, ws.exitedError(i, p)
	}
	p.kill()
	return p.pid(), nil
}

// checkAlive returns an error when a worker that was not killed has
// exited: a worker stops only when told to.
func (ws *workers) checkAlive() error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for i, p := range ws.procs {
		if p != nil && p.exited() {
			return ws.exitedError(i, p)
		}
	}
	return nil
}

func (ws *workers) exitedError(i int, p *proc) error {
	return fmt.Errorf("%s (pid %d) exited by itself: %s; its log ends:\n%s", ws.name(i), p.pid(), exitText(p.err), tailFile(ws.logPath(i), 30))
}

// stop stops every running worker with SIGTERM at once and waits for
// them; a worker that does not exit 0 within timeout is an error.
func (ws *workers) stop(timeout time.Duration) error {
	ws.mu.Lock()
	procs := slices.Clone(ws.procs)
	for i := range ws.procs {
		ws.procs[i] = nil
	}
	ws.mu.Unlock()
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		if p == nil {
			continue
		}
		wg.Go(func() {
			if err := p.stop(timeout); err != nil {
				errs[i] = fmt.Errorf("stopping %s (pid %d): %w; its log ends:\n%s", ws.name(i), p.pid(), err, tailFile(ws.logPath(i), 30))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tailFile returns the last n lines of a log file, or why it cannot.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	// A stack dump asked for (stacks) says its part elsewhere; the tail
	// is the log before it.
	if i := bytes.Index(b, []byte("\nSIGQUIT: quit")); i >= 0 {
		b = b[:i]
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- %s (last %d lines)\n%s", path, len(lines), bytes.Join(lines, []byte("\n")))
}

// TailLogs returns the last n lines of every log of a run, the broker's
// and each worker's, from the run's directory (Report.Dir).
func TailLogs(dir string, n int) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(tailFile(p, n))
		b.WriteString("\n")
	}
	return b.String()
}

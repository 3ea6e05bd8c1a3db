package streams

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Broker reachability.
//
// While its brokers do not answer, an instance processes and commits
// nothing, and franz-go retries every request quietly or, at warning
// level, once per request. The App watches its clients' connections
// instead (kgo hooks) and says, per broker address, when the broker
// stopped answering: once in the log, once to BrokerHooks, and in
// Stats.UnreachableBrokers for as long as it lasts; and again when the
// broker answers.
//
// A broker is unreachable when a connection to it fails (a refused dial,
// a connection reset, a read that timed out) and nothing from it has
// answered for unreachableAfter: a single dropped connection among
// several that answer is not an outage. A broker that is paused (SIGSTOP)
// accepts connections and answers nothing; it shows as unreachable when
// franz-go's read deadline (its request timeout overhead, 10 s by
// default) gives up, with Since set to its last answer, when the silence
// began.

// unreachableAfter is how long a broker must have been silent, when a
// connection to it fails, to count as unreachable.
const unreachableAfter = time.Second

// BrokerHook is called when a broker this instance talks to stops
// answering, and again when it answers. It is called from the Kafka
// client's goroutines, not the processing goroutine; like every hook it
// must be fast and never block.
type BrokerHook interface {
	OnBrokerReachability(BrokerReachabilityEvent)
}

// BrokerReachabilityEvent says a broker stopped answering (Reachable
// false) or answers again (Reachable true).
type BrokerReachabilityEvent struct {
	ApplicationID string
	InstanceID    string
	// Broker is the broker's address, host:port.
	Broker    string
	Reachable bool
	// Since is when the broker last answered before the outage, or when
	// the instance first tried it if it never answered; At is when the
	// change was seen. For a broker that answers again, At - Since is how
	// long it did not.
	Since, At time.Time
	// Err is the failure that showed the broker unreachable; nil when
	// Reachable.
	Err error
}

// UnreachableBroker is a broker that does not answer this instance; see
// BrokerReachabilityEvent for the fields.
type UnreachableBroker struct {
	Broker string
	Since  time.Time
	Err    string
}

// reachability tracks which brokers answer the App's clients. The kgo
// hooks call it from every connection's goroutines, hence mu.
type reachability struct {
	app    *App
	now    func() time.Time
	report func(BrokerReachabilityEvent)

	mu      sync.Mutex
	started time.Time
	brokers map[string]*brokerState
}

// brokerState is what reachability knows of one broker address.
type brokerState struct {
	lastAnswer time.Time
	// failing says a connection failed since the last answer; down that
	// the failures outlasted unreachableAfter and were reported.
	failing, down bool
	since         time.Time
	err           error
}

func newReachability(a *App) *reachability {
	r := &reachability{app: a, now: time.Now, brokers: make(map[string]*brokerState)}
	r.report = r.announce
	r.started = r.now()
	return r
}

func (r *reachability) broker(addr string) *brokerState {
	b := r.brokers[addr]
	if b == nil {
		b = &brokerState{}
		r.brokers[addr] = b
	}
	return b
}

// answered records a response from addr.
func (r *reachability) answered(addr string) {
	now := r.now()
	r.mu.Lock()
	b := r.broker(addr)
	b.lastAnswer, b.failing = now, false
	if !b.down {
		r.mu.Unlock()
		return
	}
	ev := BrokerReachabilityEvent{Broker: addr, Reachable: true, Since: b.since, At: now}
	b.down, b.err = false, nil
	r.mu.Unlock()
	r.report(ev)
}

// failed records a failed connection to addr.
func (r *reachability) failed(addr string, err error) {
	if ignoredConnError(err) {
		return
	}
	now := r.now()
	r.mu.Lock()
	b := r.broker(addr)
	b.failing = true
	if b.down {
		b.err = err
		r.mu.Unlock()
		return
	}
	since := b.lastAnswer
	if since.IsZero() {
		since = r.started
	}
	if now.Sub(since) < unreachableAfter {
		r.mu.Unlock()
		return
	}
	b.down, b.since, b.err = true, since, err
	r.mu.Unlock()
	r.report(BrokerReachabilityEvent{Broker: addr, Since: since, At: now, Err: err})
}

// ignoredConnError reports whether err says nothing of the broker: the
// client gave up the request or is closing.
func ignoredConnError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed)
}

// anyFailing reports whether a connection to some broker failed since it
// last answered.
func (r *reachability) anyFailing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.brokers {
		if b.failing {
			return true
		}
	}
	return false
}

// unreachable lists the unreachable brokers by address.
func (r *reachability) unreachable() []UnreachableBroker {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []UnreachableBroker
	for addr, b := range r.brokers {
		if b.down {
			out = append(out, UnreachableBroker{Broker: addr, Since: b.since, Err: b.err.Error()})
		}
	}
	slices.SortFunc(out, func(x, y UnreachableBroker) int { return strings.Compare(x.Broker, y.Broker) })
	return out
}

// announce logs a change once and calls the BrokerHooks.
func (r *reachability) announce(ev BrokerReachabilityEvent) {
	a := r.app
	ev.ApplicationID, ev.InstanceID = a.cfg.ApplicationID, a.cfg.InstanceID
	if ev.Reachable {
		a.log.Info("broker answers again", "broker", ev.Broker, "silent_for", ev.At.Sub(ev.Since).Round(time.Millisecond))
	} else {
		a.log.Warn("broker unreachable; processing waits for it", "broker", ev.Broker,
			"last_answer", ev.Since.Format(time.RFC3339Nano), "err", ev.Err)
	}
	for _, h := range a.hooks.broker {
		h.OnBrokerReachability(ev)
	}
}

// hook returns the kgo hook that feeds r.
func (r *reachability) hook() kgo.Hook { return reachHook{r} }

// watch returns the options that make a client of the App feed r and log
// through the App's logger, quieted during an outage. Every client of the
// App takes them: while the broker is away, the client that retries may
// be any of them (after a lost session, only the one that prepares the
// topics for the next).
func (r *reachability) watch(log *slog.Logger) []kgo.Opt {
	return []kgo.Opt{kgo.WithHooks(r.hook()), kgo.WithLogger(kgoLogger{log, r})}
}

// reachHook feeds a reachability from a client's connection events.
type reachHook struct{ r *reachability }

var (
	_ kgo.HookBrokerConnect = reachHook{}
	_ kgo.HookBrokerWrite   = reachHook{}
	_ kgo.HookBrokerRead    = reachHook{}
)

func (h reachHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.r.failed(brokerAddr(meta), err)
	}
}

func (h reachHook) OnBrokerWrite(meta kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		h.r.failed(brokerAddr(meta), err)
	}
}

func (h reachHook) OnBrokerRead(meta kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		h.r.failed(brokerAddr(meta), err)
		return
	}
	h.r.answered(brokerAddr(meta))
}

// brokerAddr is a broker's address: a seed broker and the broker the
// metadata names at the same address are one broker.
func brokerAddr(meta kgo.BrokerMetadata) string {
	return net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
}

// quiet is the level of a Kafka client's log line: while connections to a
// broker fail the client's warnings and errors come once per retry, and
// the outage is said once (or, if it is over within unreachableAfter, is
// not worth a line), so they go to debug.
func (r *reachability) quiet(level slog.Level) slog.Level {
	if r != nil && level > slog.LevelDebug && r.anyFailing() {
		return slog.LevelDebug
	}
	return level
}

package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ListenerConfig configures a Listener.
type ListenerConfig struct {
	Brokers       []string
	ClientOptions []kgo.Opt
	// Topic is the control topic; default DefaultTopic, created if it
	// does not exist.
	Topic string
	// Secret verifies the commands. Without one, every command for the
	// application is refused (and reported).
	Secret []byte
	// App is the application whose commands the Listener takes.
	// Required.
	App string
	// Instances lists the instances of this process. Required.
	Instances func() []string
	// Handle carries out a verified command. It runs on Run's goroutine.
	// Required.
	Handle func(Command) error
	// Rejected, when set, hears of every command for App that was not
	// carried out; a nil one logs them.
	Rejected func(*RejectedError)
	Logger   *slog.Logger
}

// Validate reports every problem of the config at once.
func (c ListenerConfig) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("Brokers: no broker given"))
	}
	if c.App == "" {
		errs = append(errs, errors.New("App: empty"))
	}
	if c.Instances == nil {
		errs = append(errs, errors.New("Instances: nil"))
	}
	if c.Handle == nil {
		errs = append(errs, errors.New("Handle: nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("control listener config: %w", err)
	}
	return nil
}

// Listener reads the control topic and carries out the commands for its
// process's instances.
type Listener struct {
	cfg   ListenerConfig
	cl    *kgo.Client
	close sync.Once
	seen  map[string]time.Time // nonces of the last MaxAge, Run's alone
}

// NewListener returns a Listener with its client; Run closes it, and so
// does Close, for a Listener that is not to run.
func NewListener(cfg ListenerConfig) (*Listener, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Rejected == nil {
		log := cfg.Logger
		cfg.Rejected = func(e *RejectedError) { log.Warn("control: " + e.Error()) }
	}
	opts := append([]kgo.Opt{}, cfg.ClientOptions...)
	opts = append(opts, kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(cfg.Topic),
		// Commands sent while the process was down are not for it now.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the control client: %w", err)
	}
	return &Listener{cfg: cfg, cl: cl, seen: make(map[string]time.Time)}, nil
}

// Run reads commands until ctx ends, then closes the client.
func (l *Listener) Run(ctx context.Context) error {
	defer l.Close()
	if err := EnsureTopic(ctx, l.cl, l.cfg.Topic); err != nil && ctx.Err() == nil {
		l.cfg.Logger.Warn("control: the topic could not be created; reading it once it exists", "err", err)
	}
	for {
		fetches := l.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			l.cfg.Logger.Warn("control: reading the topic", "topic", topic, "partition", p, "err", err)
		})
		fetches.EachRecord(func(r *kgo.Record) { l.take(r, time.Now()) })
	}
}

// Close closes the Listener's client. Run closes it on its way out;
// Close is for a Listener that never ran, and does nothing after Run.
func (l *Listener) Close() { l.close.Do(l.cl.Close) }

// take checks one record and carries out its command when it may.
func (l *Listener) take(r *kgo.Record, now time.Time) {
	var s signed
	if err := json.Unmarshal(r.Value, &s); err != nil {
		l.cfg.Logger.Warn("control: skipping a record that is no command", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
		return
	}
	c := s.Command
	if c.App != l.cfg.App {
		return
	}
	for nonce, at := range l.seen {
		if now.Sub(at) > 2*MaxAge {
			delete(l.seen, nonce)
		}
	}
	reject := func(reason string) { l.cfg.Rejected(&RejectedError{Command: c, Reason: reason}) }
	issued := time.UnixMilli(c.Issued)
	switch {
	case len(l.cfg.Secret) == 0:
		reject("this process has no control secret, so it verifies no command")
	case !verify(l.cfg.Secret, s):
		reject("its signature does not verify under this process's secret")
	case !slices.Contains(l.cfg.Instances(), c.Instance):
		// Another process's instance: not for this one.
	case now.Sub(issued) > MaxAge || issued.Sub(now) > MaxAge:
		reject(fmt.Sprintf("issued at %s, more than %v from this process's clock", issued.UTC().Format(time.RFC3339), MaxAge))
	case !l.fresh(c.Nonce, now):
		reject("its nonce was seen before: a replay")
	default:
		if err := checkVerb(c.Verb); err != nil {
			reject(err.Error())
			return
		}
		l.cfg.Logger.Info("control: carrying out a command", "verb", c.Verb, "instance", c.Instance)
		if err := l.cfg.Handle(c); err != nil {
			reject(err.Error())
		}
	}
}

// fresh records nonce and reports whether it was new.
func (l *Listener) fresh(nonce string, now time.Time) bool {
	if _, ok := l.seen[nonce]; ok {
		return false
	}
	l.seen[nonce] = now
	return true
}

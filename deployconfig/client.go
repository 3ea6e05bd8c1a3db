package deployconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures a Client.
type Config struct {
	// Brokers are the Kafka bootstrap addresses. Required.
	Brokers []string
	// ClientOptions are added to the Client's Kafka clients: SASL, TLS.
	ClientOptions []kgo.Opt
	// Topic is the config topic; default DefaultTopic.
	Topic string
	// Logger gets the records skipped as unreadable; default
	// slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("deployment config: Brokers: no broker given")
	}
	return nil
}

// writeTimeout bounds a write to the topic.
const writeTimeout = 10 * time.Second

// Client writes the config topic's records and follows the topic.
type Client struct {
	cfg Config
	cl  *kgo.Client
}

// NewClient returns a Client with its producer. Nothing talks to Kafka
// before a write or Follow.
func NewClient(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic),
		kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// A write fails after writeTimeout, even in flight to a broker
		// that went away, rather than stay buffered for ever. That needs
		// writes that are not idempotent, which these may be: a record
		// written twice says the same thing twice.
		kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(writeTimeout)}, cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the deployment config client: %w", err)
	}
	return &Client{cfg: cfg, cl: cl}, nil
}

// Topic is the config topic's name.
func (c *Client) Topic() string { return c.cfg.Topic }

// Close closes the producer, failing what it still holds (writes to a
// broker that is gone) within a second rather than waiting for them.
func (c *Client) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.cl.AbortBufferedRecords(ctx)
	c.cl.Close()
}

// EnsureTopic creates the config topic, compacted with one partition,
// unless it exists: whoever needs it first creates it.
func (c *Client) EnsureTopic(ctx context.Context) error {
	policy := "compact"
	resp, err := kadm.NewClient(c.cl).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &policy}, c.cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating the deployment config topic %q: %w", c.cfg.Topic, err)
	}
	return nil
}

// Put writes d, stamped with the time, after checking it.
func (c *Client) Put(ctx context.Context, d Deployment) error {
	d.Version = recordVersion
	if d.WrittenAt.IsZero() {
		d.WrittenAt = time.Now().UTC()
	}
	if err := d.Validate(); err != nil {
		return err
	}
	return c.produce(ctx, d.ID, d)
}

// Delete writes the tombstone of deployment id: its processes stop.
func (c *Client) Delete(ctx context.Context, id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	return c.produce(ctx, id, nil)
}

// PutStatus writes a process's Status, stamped with the time.
func (c *Client) PutStatus(ctx context.Context, s Status) error {
	s.Version = recordVersion
	s.At = time.Now().UTC()
	if err := CheckID(s.Deployment); err != nil {
		return err
	}
	if s.Process == "" {
		return &RecordError{Key: statusKey(s.Deployment, s.Process), Problems: []string{"the process is empty"}}
	}
	return c.produce(ctx, statusKey(s.Deployment, s.Process), s)
}

// DeleteStatus removes a process's Status: it stopped, and holds no
// turn.
func (c *Client) DeleteStatus(ctx context.Context, deployment, process string) error {
	return c.produce(ctx, statusKey(deployment, process), nil)
}

// produce writes one record to the topic's only partition; a nil v is
// a tombstone.
func (c *Client) produce(ctx context.Context, key string, v any) error {
	rec := &kgo.Record{Key: []byte(key), Partition: 0}
	if v != nil {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding the deployment config record %q: %w", key, err)
		}
		rec.Value = data
	}
	if err := c.produceOnce(ctx, rec); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			if err := c.EnsureTopic(ctx); err != nil {
				return err
			}
			err = c.produceOnce(ctx, rec)
			if err == nil {
				return nil
			}
		}
		return fmt.Errorf("writing the deployment config record %q to %s: %w", key, c.cfg.Topic, err)
	}
	return nil
}

// produceOnce writes rec, returning when ctx ends even if the client
// still holds it: a record waiting for an unreachable broker's metadata
// does not heed its context.
func (c *Client) produceOnce(ctx context.Context, rec *kgo.Record) error {
	done := make(chan error, 1)
	c.cl.Produce(ctx, rec, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// UpdateKind says what an Update carries.
type UpdateKind int

const (
	// Deployed: Deployment holds the record of ID.
	Deployed UpdateKind = iota
	// Undeployed: ID's tombstone.
	Undeployed
	// StatusPut: Status holds a process's status.
	StatusPut
	// StatusDeleted: the process Status names (Deployment, Process)
	// stopped.
	StatusDeleted
	// CaughtUp: every record the topic held when Follow started has
	// been handed over; sent once.
	CaughtUp
)

// Update is one record of the topic, as Follow hands it over.
type Update struct {
	Kind       UpdateKind
	ID         string
	Deployment Deployment
	Status     Status
	// Timestamp is the record's.
	Timestamp time.Time
}

// idleCaughtUp is how long Follow waits for a record before it counts
// itself caught up anyway: compaction may have removed the topic's last
// record (an old tombstone), which then never arrives.
const idleCaughtUp = 2 * time.Second

// Follow reads the topic from its start, creating it if missing, and
// hands every record to apply in the topic's order, then a CaughtUp
// once it has read what the topic held when it started, then every
// record written after, until ctx ends. apply runs on Follow's
// goroutine. Unreadable records are logged and skipped.
func (c *Client) Follow(ctx context.Context, apply func(Update)) error {
	if err := c.EnsureTopic(ctx); err != nil && ctx.Err() == nil {
		c.cfg.Logger.Warn("deployment config: the topic could not be created; reading it once it exists", "err", err)
	}
	end, err := c.endOffset(ctx)
	if err != nil {
		return err
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.cfg.Topic: {0: kgo.NewOffset().AtStart()}})}, c.cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("creating the deployment config reader: %w", err)
	}
	defer cl.Close()
	caughtUp := end == 0
	if caughtUp {
		apply(Update{Kind: CaughtUp})
	}
	last := time.Now()
	for {
		pollCtx, cancel := context.WithTimeout(ctx, idleCaughtUp)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				c.cfg.Logger.Warn("deployment config: reading the topic", "topic", topic, "partition", p, "err", err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			last = time.Now()
			c.apply(r, apply)
			if !caughtUp && r.Offset+1 >= end {
				caughtUp = true
				apply(Update{Kind: CaughtUp})
			}
		})
		if !caughtUp && time.Since(last) >= idleCaughtUp {
			caughtUp = true
			apply(Update{Kind: CaughtUp})
		}
	}
}

// endOffset lists the end of the topic's partition, retrying until the
// topic can be read or ctx ends.
func (c *Client) endOffset(ctx context.Context) (int64, error) {
	adm := kadm.NewClient(c.cl)
	for {
		ends, err := adm.ListEndOffsets(ctx, c.cfg.Topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			if o, ok := ends.Lookup(c.cfg.Topic, 0); ok {
				return o.Offset, nil
			}
			err = fmt.Errorf("the topic has no partition 0")
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-time.After(time.Second): // the broker may not be up yet
			c.cfg.Logger.Warn("deployment config: listing the topic's end; trying again", "topic", c.cfg.Topic, "err", err)
		}
	}
}

// apply decodes a record and hands it over.
func (c *Client) apply(r *kgo.Record, apply func(Update)) {
	key := string(r.Key)
	skip := func(err error) {
		c.cfg.Logger.Warn("deployment config: skipping a record", "topic", r.Topic, "offset", r.Offset, "key", key, "err", err)
	}
	u := Update{Timestamp: r.Timestamp}
	if dep, proc, ok := parseStatusKey(key); ok {
		if r.Value == nil {
			u.Kind, u.ID, u.Status = StatusDeleted, dep, Status{Deployment: dep, Process: proc}
			apply(u)
			return
		}
		if err := decode(r.Value, &u.Status); err != nil {
			skip(err)
			return
		}
		u.Kind, u.ID = StatusPut, dep
		u.Status.Deployment, u.Status.Process = dep, proc
		apply(u)
		return
	}
	if err := CheckID(key); err != nil {
		skip(err)
		return
	}
	u.ID = key
	if r.Value == nil {
		u.Kind = Undeployed
		apply(u)
		return
	}
	if err := decode(r.Value, &u.Deployment); err != nil {
		skip(err)
		return
	}
	if u.Deployment.ID != key {
		skip(fmt.Errorf("the record names deployment %q", u.Deployment.ID))
		return
	}
	if err := u.Deployment.Validate(); err != nil {
		skip(err)
		return
	}
	u.Kind = Deployed
	apply(u)
}

// decode reads a record of this version.
func decode(data []byte, v any) error {
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	if head.Version != recordVersion {
		return fmt.Errorf("version %d, want %d", head.Version, recordVersion)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

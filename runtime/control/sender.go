package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SenderConfig configures a Sender.
type SenderConfig struct {
	Brokers       []string
	ClientOptions []kgo.Opt
	// Topic is the control topic; default DefaultTopic, created if it
	// does not exist.
	Topic string
	// Secret signs the commands. Required.
	Secret []byte
}

// Validate reports every problem of the config at once.
func (c SenderConfig) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("Brokers: no broker given"))
	}
	if len(c.Secret) == 0 {
		errs = append(errs, fmt.Errorf("Secret: %w", errNoSecret))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("control sender config: %w", err)
	}
	return nil
}

// Sender signs commands and writes them to the control topic.
type Sender struct {
	cfg SenderConfig
	cl  *kgo.Client
}

// NewSender returns a Sender with its client; Close closes it.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	opts := append([]kgo.Opt{}, cfg.ClientOptions...)
	opts = append(opts, kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the control client: %w", err)
	}
	return &Sender{cfg: cfg, cl: cl}, nil
}

// Close closes the Sender's client.
func (s *Sender) Close() { s.cl.Close() }

// Send signs a command to instance of app and waits until the broker has
// it: the instance acts on it when it reads it, within a second or so.
func (s *Sender) Send(ctx context.Context, app, instance, verb string) error {
	if err := checkVerb(verb); err != nil {
		return err
	}
	nonce, err := newNonce()
	if err != nil {
		return fmt.Errorf("making a nonce: %w", err)
	}
	sc, err := sign(s.cfg.Secret, Command{App: app, Instance: instance, Verb: verb, Issued: time.Now().UnixMilli(), Nonce: nonce})
	if err != nil {
		return err
	}
	value, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	if err := EnsureTopic(ctx, s.cl, s.cfg.Topic); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.cl.ProduceSync(ctx, &kgo.Record{Key: []byte(app), Value: value}).FirstErr(); err != nil {
		return fmt.Errorf("sending %s of %s/%s to topic %q: %w", verb, app, instance, s.cfg.Topic, err)
	}
	return nil
}

// EnsureTopic creates the control topic, one partition so that commands
// keep their order, with a day's retention, unless it exists.
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	retention := "86400000"
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, map[string]*string{"retention.ms": &retention}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating control topic %q: %w", topic, err)
	}
	return nil
}

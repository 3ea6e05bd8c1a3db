package clientconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Opts returns the franz-go options of c, for every Kafka client of a
// command: client.id, the SASL mechanism with its credentials, and a TLS
// dialer with the truststore and keystore, which it reads. The seed
// brokers are not among them: bootstrap.servers is for the command to
// weigh against its --brokers flag. Validate's problems, or a store that
// does not read, are its error. The zero Config has none.
func (c *Config) Opts() ([]kgo.Opt, error) { return c.opts(nil) }

// opts are Opts, the SASL exchanges followed by track when not nil.
func (c *Config) opts(track *saslTrack) ([]kgo.Opt, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	if c.SASL() {
		m, err := c.mechanism()
		if err != nil {
			return nil, err
		}
		if track != nil {
			m = &trackedMechanism{Mechanism: m, track: track}
		}
		opts = append(opts, kgo.SASL(m))
	}
	if c.TLS() {
		cfg, err := c.TLSConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.Dialer((&dialer{tls: cfg, truststore: c.TruststoreLocation}).DialContext))
	}
	return opts, nil
}

// mechanism is the SASL mechanism with its credentials.
func (c *Config) mechanism() (sasl.Mechanism, error) {
	user, password, err := c.credentials()
	if err != nil {
		return nil, err
	}
	switch c.SASLMechanism {
	case Plain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case ScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	default:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	}
}

// User is the SASL user, "" without SASL.
func (c *Config) User() string {
	if !c.SASL() {
		return ""
	}
	user, _, _ := c.credentials()
	return user
}

// AuthError says the brokers refused the client's SASL login.
type AuthError struct {
	// Brokers are the addresses tried.
	Brokers []string
	// Mechanism and User are the login refused.
	Mechanism, User string
	// Err is the broker's answer.
	Err error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("authenticating to %s with %s as user %q: the broker refused the login (wrong user or password?): %v",
		strings.Join(e.Brokers, ","), e.Mechanism, e.User, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// CheckTimeout bounds Check.
const CheckTimeout = 10 * time.Second

// Check connects to the seed brokers with c's options (one metadata
// request, CheckTimeout at most) so that a command fails at once, and
// clearly, on what no retry heals: a refused login (*AuthError, naming
// the mechanism and the user, never the password), a broker certificate
// that is not trusted (*CertificateError, naming the broker and the
// truststore), a broker that does not speak TLS. A broker that does not
// answer is not its concern: it returns nil, and the command's own
// waiting for the cluster goes on as without a client configuration.
func (c *Config) Check(ctx context.Context, seeds []string) error {
	track := &saslTrack{}
	opts, err := c.opts(track)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(seeds...))...)
	if err != nil {
		return fmt.Errorf("checking the client config: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	return c.classify(seeds, track, cl.Ping(ctx))
}

// classify keeps the errors Check reports, made to say what is wrong.
func (c *Config) classify(seeds []string, track *saslTrack, err error) error {
	if err == nil {
		return nil
	}
	var cert *CertificateError
	if errors.As(err, &cert) {
		return cert
	}
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState) || errors.Is(err, kerr.UnsupportedSaslMechanism) {
		return &AuthError{Brokers: seeds, Mechanism: c.SASLMechanism, User: c.User(), Err: err}
	}
	// A broker may close the connection instead of answering a failed
	// login (Kafka with SASL handshake v0, the embedded broker).
	if track.started.Load() && !track.done.Load() && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
		return &AuthError{Brokers: seeds, Mechanism: c.SASLMechanism, User: c.User(),
			Err: fmt.Errorf("the broker closed the connection during the SASL exchange: %w", err)}
	}
	if errors.Is(err, errNotTLS) {
		return err
	}
	return nil
}

// saslTrack follows the SASL exchanges of Check's client: whether one
// started, and whether one completed.
type saslTrack struct{ started, done atomic.Bool }

// trackedMechanism is a sasl.Mechanism whose exchanges a saslTrack
// follows.
type trackedMechanism struct {
	sasl.Mechanism
	track *saslTrack
}

func (m *trackedMechanism) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	m.track.started.Store(true)
	s, first, err := m.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	return &trackedSession{Session: s, track: m.track}, first, nil
}

type trackedSession struct {
	sasl.Session
	track *saslTrack
}

func (s *trackedSession) Challenge(resp []byte) (bool, []byte, error) {
	done, next, err := s.Session.Challenge(resp)
	if done && err == nil {
		s.track.done.Store(true)
	}
	return done, next, err
}

// Package broker runs an embedded Kafka-compatible broker: franz-go's kfake
// cluster, listening on a loopback address and optionally persisting its log
// to a data directory so that topics, records and committed offsets survive a
// restart.
//
// It is what `braid broker` and `braid serve` run when no external cluster is
// given, and what the runtime's tests run against. Any Kafka client (kcat,
// librdkafka, the Java client) can connect to it; against a real cluster the
// runtime's code runs unchanged.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Config says where the embedded broker listens and where it keeps its data.
// The zero value is usable: a memory-only broker on a random loopback port.
type Config struct {
	// Listen is the host:port to listen on. Empty means 127.0.0.1 on a
	// random free port. Port 0 also picks a free port.
	Listen string

	// DataDir, when set, makes the broker persist topics, records, groups
	// and offsets there and reload them on the next start. Empty keeps
	// everything in memory.
	DataDir string

	// Partitions is the partition count of topics created automatically
	// (a produce or metadata request for an unknown topic). Default 4.
	Partitions int

	// Logger receives the broker's warnings and errors. Default: discard.
	Logger *slog.Logger

	// SASLUser and SASLPassword, when set, make the broker refuse every
	// client that does not authenticate as this user with SASL
	// SCRAM-SHA-256 (ClientOptions are what a franz-go client needs).
	// Without TLS the traffic itself is still in the clear.
	SASLUser, SASLPassword string

	// Insecure lets the broker listen on an address other than loopback
	// without SASL. Without it, Start refuses to (an UnauthenticatedError):
	// anyone who reaches such a port can read, write and delete every
	// topic.
	Insecure bool
}

// UnauthenticatedError says a broker was asked to listen off loopback
// without SASL credentials and without Config.Insecure.
type UnauthenticatedError struct {
	// Listen is the address asked for.
	Listen string
}

func (e *UnauthenticatedError) Error() string {
	return fmt.Sprintf("broker listen address %q is not loopback and the broker has no SASL credentials: anyone who reaches it could read and write every topic", e.Listen)
}

// SASLMechanism is the SASL mechanism of a broker with credentials.
const SASLMechanism = "SCRAM-SHA-256"

// SASLClientOptions are the franz-go options that authenticate as user
// with SASLMechanism; none when user is empty.
func SASLClientOptions(user, password string) []kgo.Opt {
	if user == "" {
		return nil
	}
	return []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())}
}

// Broker is a running embedded broker. Close it when done.
type Broker struct {
	cluster    *kfake.Cluster
	addr       string
	clientOpts []kgo.Opt

	closeOnce sync.Once
}

// Start starts a broker as cfg says. It returns once the broker accepts
// connections.
func Start(cfg Config) (*Broker, error) {
	host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	parts := cfg.Partitions
	if parts == 0 {
		parts = 4
	}
	if parts < 0 {
		return nil, fmt.Errorf("broker partitions: %d is negative", parts)
	}
	if (cfg.SASLUser == "") != (cfg.SASLPassword == "") {
		return nil, errors.New("broker SASL credentials: give both a user and a password, or neither")
	}
	if cfg.SASLUser == "" && !cfg.Insecure && !isLoopback(host) {
		return nil, &UnauthenticatedError{Listen: cfg.Listen}
	}
	opts := []kfake.Opt{
		// One broker: every partition leads here, so nothing is lost by
		// running fewer, and requests never bounce between fake nodes.
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
		}),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(parts),
		kfake.ClusterID("braid"),
		// Kafka Streams apps use session timeouts well below kfake's 6 s
		// floor when tests want fast failure detection.
		kfake.GroupMinSessionTimeout(500 * time.Millisecond),
	}
	if cfg.Logger != nil {
		opts = append(opts, kfake.WithLogger(slogLogger{cfg.Logger}))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	if cfg.SASLUser != "" {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(SASLMechanism, cfg.SASLUser, cfg.SASLPassword))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("starting embedded broker on %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) == 0 {
		c.Close()
		return nil, errors.New("starting embedded broker: it listens on no address")
	}
	return &Broker{cluster: c, addr: addrs[0], clientOpts: SASLClientOptions(cfg.SASLUser, cfg.SASLPassword)}, nil
}

// isLoopback says whether a listen host is a loopback address or
// localhost.
func isLoopback(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func splitListen(listen string) (host string, port int, err error) {
	if listen == "" {
		return "127.0.0.1", 0, nil
	}
	h, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("broker listen address %q: %w", listen, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("broker listen address %q: port %q is not a number from 0 to 65535", listen, p)
	}
	if h == "" {
		h = "127.0.0.1"
	}
	return h, port, nil
}

// Addr returns the host:port clients bootstrap from.
func (b *Broker) Addr() string { return b.addr }

// Addrs returns the bootstrap addresses as a slice, the shape client
// configurations take.
func (b *Broker) Addrs() []string { return []string{b.addr} }

// ClientOptions are the franz-go options a client of this broker needs
// besides its address: SASL when the broker has credentials.
func (b *Broker) ClientOptions() []kgo.Opt { return slices.Clone(b.clientOpts) }

// Compact runs log compaction on every compacted topic now. The embedded
// broker's own cleaner runs rarely; tests that need a compacted changelog
// call this.
func (b *Broker) Compact() { b.cluster.Compact() }

// Close stops the broker, flushing persisted data to the data directory.
// It is safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(b.cluster.Close)
	return nil
}

// Run blocks until ctx is done and then closes the broker. It is the shape
// `braid broker` wants.
func (b *Broker) Run(ctx context.Context) error {
	<-ctx.Done()
	return b.Close()
}

// slogLogger adapts kfake's leveled logger to log/slog. kfake logs every
// request at info level, far too much for an application log, so only
// warnings and errors pass.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Logf(level kfake.LogLevel, msg string, args ...any) {
	switch level {
	case kfake.LogLevelError:
		s.l.Error(fmt.Sprintf(msg, args...), "component", "broker")
	case kfake.LogLevelWarn:
		s.l.Warn(fmt.Sprintf(msg, args...), "component", "broker")
	}
}

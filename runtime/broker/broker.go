// Package broker runs an embedded Kafka-compatible broker: franz-go's kfake
// cluster, listening on a loopback address and optionally persisting its log
// to a data directory so that topics, records and committed offsets survive a
// restart (see Config.DataDir and Config.Sync for what survives what).
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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	//
	// Every appended batch, committed offset and producer-id or
	// transaction change is written to its file as it happens, so a
	// broker process killed with SIGKILL loses nothing it acknowledged.
	// Written only at a clean Close: topics created automatically (those
	// of CreateTopics are written at once), group members (after a kill
	// a group starts empty, and the first member to join again is given
	// every partition at once, while the others may still hold records
	// of theirs to send: see streams' abandonProduced), open
	// transactions (aborted on the next start, their producers fenced;
	// Start writes their abort markers, which kfake leaves out, before it
	// lets clients in, reading the whole log once to find them),
	// idempotent producers' sequence windows (a produce retried across a
	// kill may be appended twice) and log start offsets. Without Sync the
	// writes reach the OS page cache only (synced when a segment rolls and
	// at Close), which a machine crash or power loss can lose.
	DataDir string

	// Sync makes the broker fsync every batch it appends, and every
	// group and producer-id entry, before acknowledging it (kfake's
	// SyncWrites), so that an acknowledged produce survives a machine
	// crash too. It is much slower. It matters only with DataDir.
	Sync bool

	// Advertise is the host:port the broker gives clients in metadata as
	// its address, instead of the address it listens on: Kafka's
	// advertised.listeners, for clients that reach it through a proxy or
	// NAT. Clients bootstrap from any address that reaches the broker and
	// then connect to this one. Empty advertises the listen address.
	Advertise string

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

	// Retention is how long records of topics with cleanup.policy=delete
	// (sources, sinks, repartition topics, and topics created
	// automatically) are kept, unless the topic sets retention.ms itself.
	// Default 168h, Kafka's log.retention.ms. The broker keeps every record
	// in memory (and, with DataDir, on disk), so this bounds its size.
	// Negative keeps records forever.
	Retention time.Duration

	// RetentionCheckInterval is how often the broker deletes the records
	// past retention and compacts the compacted topics (changelogs).
	// Default Retention/10, from 100 ms to 30 s.
	RetentionCheckInterval time.Duration

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
	cluster *kfake.Cluster
	// addr is the advertised address, listenAddr the bound one.
	addr, listenAddr string
	clientOpts       []kgo.Opt
	retention        time.Duration
	now              func() time.Time // time.Now, but for tests
	log              *slog.Logger     // nil: no log

	// admin is the client the retention pass uses; stopCleaner ends the
	// cleaner goroutine and cleanerDone closes when it has.
	admin       *kgo.Client
	stopCleaner context.CancelFunc
	cleanerDone chan struct{}

	// hold holds transactional produce requests while a retention pass
	// decides whether to compact (see compactStable).
	hold          compactionHold
	beforeCompact func() // tests: called after the check, before compacting

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
	if cfg.Advertise != "" {
		if err := checkAdvertise(cfg.Advertise); err != nil {
			return nil, err
		}
	}
	// kfake tells clients the address its listener reports, so the
	// listener reports the advertised one; listenAddr keeps the real one.
	var listenAddr string
	// With a data dir, no client gets through before the log is repaired
	// (see repairCrashAbortedTxns).
	var gate *gatedListener
	opts := []kfake.Opt{
		// One broker: every partition leads here, so nothing is lost by
		// running fewer, and requests never bounce between fake nodes.
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			ln, err := net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return nil, err
			}
			listenAddr = ln.Addr().String()
			if cfg.Advertise != "" {
				ln = advertisedListener{Listener: ln, addr: tcpAddr(cfg.Advertise)}
			}
			if cfg.DataDir != "" {
				gate = newGatedListener(ln)
				ln = gate
			}
			return ln, nil
		}),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(parts),
		kfake.ClusterID("braid"),
		// Kafka Streams apps use session timeouts well below kfake's 6 s
		// floor when tests want fast failure detection.
		kfake.GroupMinSessionTimeout(500 * time.Millisecond),
		// No broker-wide time retention in kfake: its own pass, which
		// Cluster.Compact runs for every topic, drops everything up to
		// any batch past retention, so one record stamped long ago took
		// the records of now before it. ApplyRetention deletes by time
		// as Kafka does, from the log's start (see there); a topic's own
		// retention.ms still reaches kfake's pass.
		//
		// Nor does kfake compact on its own hourly ticker: its compaction
		// must wait for no transaction to be open (see compactStable),
		// which ApplyRetention checks before it asks for one. Ten years
		// stands for never.
		kfake.BrokerConfigs(map[string]string{"log.retention.ms": "-1", "log.cleaner.backoff.ms": "315360000000"}),
	}
	if cfg.Logger != nil {
		opts = append(opts, kfake.WithLogger(slogLogger{cfg.Logger}))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	if cfg.Sync {
		opts = append(opts, kfake.SyncWrites())
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
	if gate != nil {
		if err := repairLog(c, gate, SASLClientOptions(cfg.SASLUser, cfg.SASLPassword)); err != nil {
			c.Close()
			return nil, fmt.Errorf("starting embedded broker: writing the abort markers of transactions open at its last stop: %w", err)
		}
		gate.Open()
	}
	b := &Broker{cluster: c, addr: addrs[0], listenAddr: listenAddr, clientOpts: SASLClientOptions(cfg.SASLUser, cfg.SASLPassword), now: time.Now, log: cfg.Logger}
	b.holdTransactionalProduce()
	b.retention = cfg.Retention
	if b.retention == 0 {
		b.retention = DefaultRetention
	}
	interval := cfg.RetentionCheckInterval
	if interval <= 0 {
		interval = min(max(b.retention/10, 100*time.Millisecond), 30*time.Second)
	}
	// The retention client talks to the broker directly, not through the
	// advertised address, which the broker's own host may not reach (NAT)
	// or which a proxy may cut.
	b.admin, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.listenAddr), kgo.Dialer(b.dialDirect)}, b.clientOpts...)...)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("starting embedded broker: creating its retention client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stopCleaner, b.cleanerDone = cancel, make(chan struct{})
	go b.clean(ctx, interval, cfg.Logger)
	return b, nil
}

// repairLog writes the abort markers kfake's crash recovery leaves out,
// through gate's in-memory connections.
func repairLog(c *kfake.Cluster, gate *gatedListener, opts []kgo.Opt) error {
	addrs := c.ListenAddrs()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.Dialer(gate.dial)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return repairCrashAbortedTxns(ctx, cl)
}

// DefaultRetention is Config.Retention's default: Kafka's
// log.retention.ms, 7 days.
const DefaultRetention = 7 * 24 * time.Hour

// clean applies retention every interval until ctx ends.
func (b *Broker) clean(ctx context.Context, interval time.Duration, log *slog.Logger) {
	defer close(b.cleanerDone)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := b.ApplyRetention(ctx); err != nil && ctx.Err() == nil && log != nil {
			log.Warn("applying retention", "component", "broker", "err", err)
		}
	}
}

// ApplyRetention does now what the broker does every
// RetentionCheckInterval: it deletes the records older than their
// topic's retention from every topic whose cleanup.policy is delete
// (a DeleteRecords up to the first offset within retention, by record
// timestamp), and compacts the compacted topics. kfake, the broker
// underneath, would apply retention.ms itself only to topics that set it
// and only every log.cleaner.backoff.ms (an hour), and applies the
// broker-wide retention to compacted topics too, which Kafka does not;
// so the broker does it this way instead.
func (b *Broker) ApplyRetention(ctx context.Context) error {
	adm := kadm.NewClient(b.admin)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics: %w", err)
	}
	if len(topics) == 0 {
		return nil
	}
	configs, err := adm.DescribeTopicConfigs(ctx, topics.Names()...)
	if err != nil {
		return fmt.Errorf("describing topic configs: %w", err)
	}
	byRetention := make(map[time.Duration][]string)
	var compacted []string
	for _, rc := range configs {
		if rc.Err != nil {
			continue // deleted meanwhile
		}
		retention := b.retention
		policy := "delete"
		for _, c := range rc.Configs {
			switch {
			case c.Key == "cleanup.policy" && c.Value != nil:
				policy = *c.Value
			case c.Key == "retention.ms" && c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig:
				if ms, err := strconv.ParseInt(*c.Value, 10, 64); err == nil {
					retention = time.Duration(ms) * time.Millisecond
				}
			}
		}
		if strings.Contains(policy, "compact") {
			compacted = append(compacted, rc.Name)
			continue
		}
		if retention >= 0 {
			byRetention[retention] = append(byRetention[retention], rc.Name)
		}
	}
	var errs []error
	for retention, names := range byRetention {
		cutoff := b.now().Add(-retention).UnixMilli()
		listed, err := adm.ListOffsetsAfterMilli(ctx, cutoff, names...)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing offsets after %d ms: %w", cutoff, err))
			continue
		}
		starts, err := adm.ListStartOffsets(ctx, names...)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing start offsets: %w", err))
			continue
		}
		del := make(kadm.Offsets)
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err != nil || o.Partition < 0 {
				return
			}
			if st, ok := starts.Lookup(o.Topic, o.Partition); ok && st.Err == nil && o.Offset > st.Offset {
				del.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
			}
		})
		if len(del) == 0 {
			continue
		}
		resps, err := adm.DeleteRecords(ctx, del)
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting records: %w", err))
			continue
		}
		if err := resps.Error(); err != nil {
			errs = append(errs, fmt.Errorf("deleting records: %w", err))
		}
	}
	if len(compacted) > 0 {
		if err := b.compactStable(ctx, adm, compacted); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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

// dialDirect dials the listen address in place of the advertised one.
func (b *Broker) dialDirect(ctx context.Context, network, host string) (net.Conn, error) {
	if host == b.addr {
		host = b.listenAddr
	}
	var d net.Dialer
	return d.DialContext(ctx, network, host)
}

// checkAdvertise checks that an advertised address is host:port with a
// host and a port from 1 to 65535: clients will dial it.
func checkAdvertise(addr string) error {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("broker advertised address %q: %w", addr, err)
	}
	if h == "" {
		return fmt.Errorf("broker advertised address %q: it has no host", addr)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("broker advertised address %q: port %q is not a number from 1 to 65535", addr, p)
	}
	return nil
}

// advertisedListener is a listener that reports another address than the
// one it is bound to; kfake puts that address in its metadata.
type advertisedListener struct {
	net.Listener
	addr net.Addr
}

func (l advertisedListener) Addr() net.Addr { return l.addr }

// tcpAddr is a TCP address given as host:port, possibly a host name.
type tcpAddr string

func (tcpAddr) Network() string  { return "tcp" }
func (a tcpAddr) String() string { return string(a) }

// Addr returns the host:port clients bootstrap from: the advertised
// address when Config.Advertise is set, else the listen address.
func (b *Broker) Addr() string { return b.addr }

// ListenAddr returns the host:port the broker is bound to, with the port
// it picked when asked for port 0.
func (b *Broker) ListenAddr() string { return b.listenAddr }

// Addrs returns the bootstrap addresses as a slice, the shape client
// configurations take.
func (b *Broker) Addrs() []string { return []string{b.addr} }

// ClientOptions are the franz-go options a client of this broker needs
// besides its address: SASL when the broker has credentials.
func (b *Broker) ClientOptions() []kgo.Opt { return slices.Clone(b.clientOpts) }

// Compact runs log compaction on every compacted topic now. The embedded
// broker's own cleaner runs rarely; tests that need a compacted changelog
// call this. Unlike the retention pass (ApplyRetention), it compacts the
// records of open transactions too (see compactStable).
func (b *Broker) Compact() { b.cluster.Compact() }

// Close stops the broker, flushing persisted data to the data directory.
// It is safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.stopCleaner()
		<-b.cleanerDone
		b.admin.Close()
		b.cluster.Close()
	})
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

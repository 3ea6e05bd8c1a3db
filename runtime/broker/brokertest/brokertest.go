// Package brokertest gives a test the broker it runs against: the embedded
// broker (kfake) by default, or a real Apache Kafka cluster when the
// environment asks for one. It is the one switch between the two, so a test
// written against a *Cluster runs unchanged on both.
//
// BRAID_TEST_KAFKA selects the broker:
//
//   - empty: each Start starts an embedded broker for that test alone.
//   - "start": Main starts an Apache Kafka cluster (scripts/kafka.sh, KRaft,
//     BRAID_TEST_KAFKA_NODES nodes, default 1) before the package's tests
//     and stops it after them; every Start shares it.
//   - host:port[,host:port...]: every Start shares that running cluster.
//
// On Kafka the tests of a package share one cluster, so each test's Start
// registers a cleanup that deletes every topic and consumer group once the
// test ends, and waits until the deletion is done: the next test may reuse
// the names. Tests that need what only the embedded broker has (a data
// directory, SASL, silencing requests, restarting it) say so with
// Cluster.Embedded or Kfake and are skipped on Kafka.
//
// A test that needs a cluster configured otherwise (a secured listener,
// say) starts one of its own with StartKafkaWith.
//
// A package whose tests use Start calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { brokertest.Main(m) }
package brokertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The environment variables that select the broker.
const (
	// EnvKafka is "", "start" or a bootstrap address list; see the
	// package doc.
	EnvKafka = "BRAID_TEST_KAFKA"
	// EnvNodes is the node count of the cluster Main starts: 1 or 3.
	EnvNodes = "BRAID_TEST_KAFKA_NODES"
)

// kafka is the real cluster of this test binary, when there is one.
var kafka struct {
	addrs []string
	nodes int
	dir   string // the cluster's directory when Main started it
	err   error  // why Main could not start it
	main  bool   // Main ran
}

// Main runs m's tests, first starting an Apache Kafka cluster when
// BRAID_TEST_KAFKA=start and stopping it after them. It exits the process
// with the tests' exit code.
func Main(m *testing.M) {
	kafka.main = true
	os.Exit(run(m))
}

func run(m *testing.M) int {
	switch v := os.Getenv(EnvKafka); v {
	case "":
	case "start":
		nodes := 1
		if s := os.Getenv(EnvNodes); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 9 {
				fmt.Fprintf(os.Stderr, "brokertest: %s=%q: want a node count from 1 to 9\n", EnvNodes, s)
				return 2
			}
			nodes = n
		}
		c, err := StartKafka(nodes)
		if err != nil {
			fmt.Fprintf(os.Stderr, "brokertest: starting Apache Kafka: %v\n", err)
			return 2
		}
		defer c.Stop()
		kafka.addrs, kafka.nodes, kafka.dir = c.Addrs, nodes, c.Dir
		// A process the tests start inherits the addresses, not
		// "start": a test binary run again as a helper shares this
		// cluster instead of starting one of its own.
		os.Setenv(EnvKafka, strings.Join(c.Addrs, ","))
	default:
		kafka.addrs = strings.Split(v, ",")
		kafka.nodes = len(kafka.addrs)
	}
	return m.Run()
}

// OnKafka reports whether this test binary runs against Apache Kafka.
func OnKafka() bool { return os.Getenv(EnvKafka) != "" }

// Kfake skips t when it runs on Apache Kafka, saying why the test needs the
// embedded broker.
func Kfake(t testing.TB, why string) {
	t.Helper()
	if OnKafka() {
		t.Skipf("needs the embedded broker: %s", why)
	}
}

// Cluster is the broker of one test.
type Cluster struct {
	addrs    []string
	opts     []kgo.Opt
	embedded *broker.Broker // nil on Kafka
}

// Start returns the broker for t: a new embedded broker configured by cfg,
// or the shared Kafka cluster. On Kafka, a cfg that asks for what only the
// embedded broker does (a data directory, SASL, a listen or advertised
// address, retention) skips t.
func Start(t testing.TB, cfg broker.Config) *Cluster {
	t.Helper()
	if !OnKafka() {
		b, err := broker.Start(cfg)
		if err != nil {
			t.Fatalf("starting the embedded broker: %v", err)
		}
		t.Cleanup(func() { b.Close() })
		return &Cluster{addrs: b.Addrs(), opts: b.ClientOptions(), embedded: b}
	}
	if why := embeddedOnly(cfg); why != "" {
		t.Skipf("needs the embedded broker: its %s", why)
	}
	if !kafka.main {
		t.Fatalf("%s=%s needs brokertest.Main in the package's TestMain", EnvKafka, os.Getenv(EnvKafka))
	}
	c := &Cluster{addrs: slices.Clone(kafka.addrs)}
	t.Cleanup(func() {
		if err := c.reset(); err != nil {
			t.Errorf("clearing the Kafka cluster after the test: %v", err)
		}
	})
	return c
}

// embeddedOnly names the first setting of cfg only the embedded broker has.
func embeddedOnly(cfg broker.Config) string {
	switch {
	case cfg.DataDir != "":
		return "data directory"
	case cfg.SASLUser != "":
		return "SASL credentials"
	case cfg.Listen != "" || cfg.Advertise != "":
		return "listen and advertised addresses"
	case cfg.Retention != 0 || cfg.RetentionCheckInterval != 0:
		return "retention pass"
	}
	return ""
}

// Addr is the first bootstrap address.
func (c *Cluster) Addr() string { return c.addrs[0] }

// Addrs are the bootstrap addresses.
func (c *Cluster) Addrs() []string { return slices.Clone(c.addrs) }

// Bootstrap is Addrs joined with commas, as flags take them.
func (c *Cluster) Bootstrap() string { return strings.Join(c.addrs, ",") }

// ClientOptions are the franz-go options a client needs besides the
// addresses (SASL, for an embedded broker with credentials).
func (c *Cluster) ClientOptions() []kgo.Opt { return slices.Clone(c.opts) }

// OnKafka reports whether c is the Apache Kafka cluster.
func (c *Cluster) OnKafka() bool { return c.embedded == nil }

// Nodes is the number of brokers: 1 for the embedded broker.
func (c *Cluster) Nodes() int {
	if c.embedded != nil {
		return 1
	}
	return kafka.nodes
}

// Embedded returns the embedded broker, for what only it does (silencing
// requests, closing it mid-test, compacting on demand); on Kafka it skips
// t, saying why.
func (c *Cluster) Embedded(t testing.TB, why string) *broker.Broker {
	t.Helper()
	if c.embedded == nil {
		t.Skipf("needs the embedded broker: %s", why)
	}
	return c.embedded
}

// reset deletes every consumer group and every topic but Kafka's own, and
// waits until the topics are gone from the metadata.
func (c *Cluster) reset() error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs...)}, c.opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return errors.Join(deleteGroups(ctx, cl, adm), deleteTopics(ctx, adm))
}

// deleteGroups deletes every group, first removing the members still in
// them: static members, which leave a group only when their session times
// out, and the members of instances a test crashed.
func deleteGroups(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("listing groups: %w", err)
	}
	names := listed.Groups()
	if len(names) == 0 {
		return nil
	}
	described, err := adm.DescribeGroups(ctx, names...)
	if err != nil {
		return fmt.Errorf("describing groups: %w", err)
	}
	var errs []error
	for _, g := range described.Sorted() {
		if len(g.Members) == 0 {
			continue
		}
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = g.Group
		for _, m := range g.Members {
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID, lm.InstanceID = m.MemberID, m.InstanceID
			req.Members = append(req.Members, lm)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing the members of group %s: %w", g.Group, err))
		}
	}
	deleted, err := adm.DeleteGroups(ctx, names...)
	if err != nil {
		return fmt.Errorf("deleting groups: %w", err)
	}
	for _, r := range deleted.Sorted() {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("deleting group %s: %w", r.Group, r.Err))
		}
	}
	return errors.Join(errs...)
}

// deleteTopics deletes every topic but Kafka's own, waiting until they are
// gone (broker.DeleteTopics): a next test may create one of the names.
func deleteTopics(ctx context.Context, adm *kadm.Client) error {
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics: %w", err)
	}
	return broker.DeleteTopics(ctx, adm, topics.Names()...)
}

// Kafka is an Apache Kafka cluster started by StartKafka.
type Kafka struct {
	// Addrs are its bootstrap addresses, one per node.
	Addrs []string
	// Dir holds its nodes' data, configuration and logs.
	Dir    string
	script string
}

// StartKafka starts an Apache Kafka cluster of nodes nodes on free loopback
// ports with scripts/kafka.sh, which fetches Kafka's jars on first use. A
// watchdog stops it if this process dies without calling Stop.
func StartKafka(nodes int) (*Kafka, error) {
	return StartKafkaWith(KafkaOptions{Nodes: nodes})
}

// KafkaOptions configure a cluster StartKafkaWith starts.
type KafkaOptions struct {
	// Nodes is the node count, 1 when 0.
	Nodes int
	// ExtraConfig is broker properties appended to every node's
	// server.properties (kafka.sh start --extra-config): a property set
	// again overrides Braid's, so that a test can add a listener of its
	// own (on a port from FreePort) beside the PLAINTEXT one whose
	// addresses Addrs are. In it @NODE@, @PORT@ and @CONTROLLER_PORT@
	// are each node's number and its PLAINTEXT and controller ports.
	ExtraConfig string
}

// StartKafkaWith starts an Apache Kafka cluster as StartKafka does, with
// opts.
func StartKafkaWith(opts KafkaOptions) (*Kafka, error) {
	nodes := max(opts.Nodes, 1)
	script, err := findScript()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 {
		dir, err := os.MkdirTemp("", "braid-brokertest-")
		if err != nil {
			return nil, err
		}
		port, cport, err := freePorts(nodes)
		if err != nil {
			return nil, err
		}
		args := []string{"start", "--dir", dir, "--nodes", strconv.Itoa(nodes),
			"--port", strconv.Itoa(port), "--controller-port", strconv.Itoa(cport),
			"--watch-pid", strconv.Itoa(os.Getpid())}
		if opts.ExtraConfig != "" {
			extra := filepath.Join(dir, "extra.properties")
			if err := os.WriteFile(extra, []byte(opts.ExtraConfig+"\n"), 0o600); err != nil {
				return nil, fmt.Errorf("writing the extra broker config: %w", err)
			}
			args = append(args, "--extra-config", extra)
		}
		cmd := exec.Command(script, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err == nil {
			return &Kafka{Addrs: strings.Split(strings.TrimSpace(string(out)), ","), Dir: dir, script: script}, nil
		}
		exec.Command(script, "stop", "--dir", dir, "--kill").Run()
		os.RemoveAll(dir)
		lastErr = fmt.Errorf("%s start: %w\n%s", script, err, stderr.String())
		// A port taken between the check and the bind: try others.
		if !strings.Contains(stderr.String(), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

// Stop kills the cluster's nodes and deletes its directory.
func (k *Kafka) Stop() error {
	err := exec.Command(k.script, "stop", "--dir", k.Dir, "--kill").Run()
	os.RemoveAll(k.Dir)
	if err != nil {
		return fmt.Errorf("stopping Kafka in %s: %w", k.Dir, err)
	}
	return nil
}

// Reset deletes every topic but Kafka's own and every consumer group, as
// after each test on a shared cluster, so that a next run may reuse the
// names (the chaos runs share one cluster).
func (k *Kafka) Reset() error {
	if err := (&Cluster{addrs: k.Addrs}).reset(); err != nil {
		return fmt.Errorf("clearing the Kafka cluster in %s: %w", k.Dir, err)
	}
	return nil
}

// Node runs action (stop, kill, pause, resume or start) on node i (from 1)
// of the cluster, as broker-fault tests do.
func (k *Kafka) Node(i int, action string) error {
	out, err := exec.Command(k.script, "node", action, "--dir", k.Dir, "--node", strconv.Itoa(i)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s node %d: %w\n%s", action, i, err, out)
	}
	return nil
}

// findScript finds scripts/kafka.sh in the module's root, above the
// working directory (a package's directory under go test).
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "kafka.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scripts/kafka.sh not found above the working directory")
		}
		dir = parent
	}
}

// freePorts finds two runs of n consecutive free loopback ports, for the
// nodes' client and controller listeners.
func freePorts(n int) (port, cport int, err error) {
	pick := func(avoid int) (int, error) {
		for range 100 {
			base := 20000 + rand.IntN(30000)
			if avoid != 0 && base+n > avoid && avoid+n > base {
				continue
			}
			if portsFree(base, n) {
				return base, nil
			}
		}
		return 0, errors.New("no run of free loopback ports found")
	}
	if port, err = pick(0); err != nil {
		return 0, 0, err
	}
	cport, err = pick(port)
	return port, cport, err
}

// FreePort is a free loopback port, for a listener of a test's own in
// KafkaOptions.ExtraConfig.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func portsFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// FromBroker is a Cluster of an embedded broker the test manages itself
// (one it closes and restarts on a data directory, say), so the package's
// helpers taking a *Cluster work with it too.
func FromBroker(b *broker.Broker) *Cluster {
	return &Cluster{addrs: b.Addrs(), opts: b.ClientOptions(), embedded: b}
}

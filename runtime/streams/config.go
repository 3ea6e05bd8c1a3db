package streams

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Guarantee is the processing guarantee of an App.
type Guarantee int

const (
	// AtLeastOnce flushes outputs before committing input offsets, so no
	// record is lost; after a failure some may be processed twice.
	AtLeastOnce Guarantee = iota
	// ExactlyOnce carries each commit interval's outputs, changelog writes
	// and input offsets in one Kafka transaction, reads only committed
	// records (restores and standbys included), and applies a store's
	// writes to pebble only once their transaction committed, so that a
	// crash never leaves state that has to be wiped (see eos.go).
	ExactlyOnce
)

// RebalanceProtocol is how the group hands tasks over in a rebalance.
type RebalanceProtocol int

const (
	// RebalanceCooperative moves only the tasks that change owner, in two
	// rebalances: the first revokes them from their old owners, which
	// commit them alone and give them up, and the second, which the old
	// owners ask for at once, assigns them to their new ones. Tasks that
	// stay are never suspended: they keep processing, their stream time
	// and their record caches through the rebalance. See rebalance.go.
	RebalanceCooperative RebalanceProtocol = iota
	// RebalanceEager commits and suspends every task of every member
	// before each rebalance, and hands out the new assignment whole: one
	// rebalance instead of two, but the whole group stops for it.
	RebalanceEager
)

func (p RebalanceProtocol) String() string {
	switch p {
	case RebalanceCooperative:
		return "cooperative"
	case RebalanceEager:
		return "eager"
	}
	return fmt.Sprintf("RebalanceProtocol(%d)", int(p))
}

func (g Guarantee) String() string {
	switch g {
	case AtLeastOnce:
		return "at-least-once"
	case ExactlyOnce:
		return "exactly-once"
	}
	return "Guarantee(" + strconv.Itoa(int(g)) + ")"
}

// guarantees are the Guarantees, in the order ParseGuarantee names them.
var guarantees = []Guarantee{AtLeastOnce, ExactlyOnce}

// ParseGuarantee returns the Guarantee whose String is s
// ("at-least-once" or "exactly-once"), so that flags and APIs that take
// a guarantee by name share one list of names.
func ParseGuarantee(s string) (Guarantee, error) {
	names := make([]string, len(guarantees))
	for i, g := range guarantees {
		if g.String() == s {
			return g, nil
		}
		names[i] = g.String()
	}
	return 0, fmt.Errorf("%q is not %s", s, strings.Join(names, " or "))
}

// ErrorHandling says what happens to a record the App cannot decode or
// process.
type ErrorHandling int

const (
	// FailOnError stops the App with a *TaskFailedError. The failing
	// record's offset is not committed, so nothing is lost: a restart meets
	// it again.
	FailOnError ErrorHandling = iota
	// LogAndContinue logs the error, counts the record as skipped, calls
	// the RecordSkippedHooks and goes on with the next record.
	LogAndContinue
)

func (h ErrorHandling) String() string {
	switch h {
	case FailOnError:
		return "fail"
	case LogAndContinue:
		return "log-and-continue"
	}
	return "ErrorHandling(" + strconv.Itoa(int(h)) + ")"
}

// Config configures an App. The zero value of every field but ApplicationID
// and Brokers means "the default"; New fills the defaults in and validates.
type Config struct {
	// ApplicationID names the application: it is the consumer group id and
	// the prefix of every internal topic. Required; letters, digits, '.',
	// '_' and '-' only.
	ApplicationID string

	// Brokers are the bootstrap addresses. Required.
	Brokers []string

	// InstanceID names this member in logs, hooks and Stats, and in the
	// group when StaticMembership is set. Default: the host name and
	// process id.
	InstanceID string

	// StaticMembership makes this instance a static member of the group
	// (KIP-345): it joins with InstanceID as its group.instance.id, so
	// that an instance restarted within SessionTimeout gets its tasks
	// back without a rebalance, and finds their state in StateDir. Close
	// keeps the membership, so that a rolling restart moves nothing; the
	// group moves the tasks of a static member that does not come back
	// once its session times out (CloseAndLeave moves them at once).
	// Default false, as in Kafka Streams, which has no group.instance.id
	// unless one is configured: the default InstanceID embeds the
	// process id, which changes on every restart, so static membership
	// needs an explicit InstanceID that stays the same across restarts
	// (Validate reports one left to its default). Every instance with
	// the same InstanceID must be the same one: a second instance that
	// joins with it fences the first. See static.go.
	StaticMembership bool

	// StateDir is where tasks keep local state, under
	// <StateDir>/<ApplicationID>. Default: <os.TempDir()>/braid-state.
	StateDir string

	// CommitInterval is how often processed offsets are committed. Default
	// 30 s under AtLeastOnce and 100 ms under ExactlyOnce, as in Kafka
	// Streams: under exactly-once a commit ends a transaction, and readers
	// downstream see nothing of it before.
	CommitInterval time.Duration

	// ProcessingGuarantee defaults to AtLeastOnce.
	ProcessingGuarantee Guarantee

	// TransactionTimeout bounds, under ExactlyOnce, how long a transaction
	// of a crashed instance may stay open before the broker aborts it;
	// until then read-committed readers of the partitions it wrote wait.
	// A restarted instance with the same InstanceID aborts it at once (the
	// transactional id is <ApplicationID>-<InstanceID>). Default 10 s, as
	// in Kafka Streams; it must exceed CommitInterval. It also bounds an
	// exactly-once commit: one the broker does not complete within it is
	// given up, and the App joins the group again (see recover.go).
	TransactionTimeout time.Duration

	// DefaultKeySerde and DefaultValueSerde serialize at sinks whose stream
	// has no known serde (after a Map, say) and To was given none.
	// Default: Bytes.
	DefaultKeySerde, DefaultValueSerde Serde

	// DeserializationErrors and ProcessingErrors say what to do with a
	// record that cannot be decoded, or that a processor fails on.
	// Default: FailOnError.
	DeserializationErrors ErrorHandling
	ProcessingErrors      ErrorHandling

	// DeadLetterTopic, when set, receives every record skipped by
	// LogAndContinue, unchanged, with headers braid.error, braid.task,
	// braid.topic, braid.partition and braid.offset. The topic must exist.
	DeadLetterTopic string

	// MaxPollRecords bounds the records one poll hands to the tasks.
	// Default 0: whatever the client has buffered.
	MaxPollRecords int

	// MaxTaskIdle is how long a task that reads several partitions (a
	// join's two sides, a merge) waits for records of a partition that is
	// empty here and caught up before it goes on with the records of the
	// others, as Kafka Streams' max.task.idle.ms. Whatever the value, a
	// task waits for records the broker holds but the consumer has not
	// fetched yet, so that a side that lags behind does not let the
	// other's stream time run ahead and close windows early. Default 0:
	// no wait beyond that. MaxTaskIdleDisabled (-1) turns waiting off
	// altogether: a task processes what it has, and records that come
	// later may be out of order or late. See idle.go.
	MaxTaskIdle time.Duration

	// SessionTimeout is the group session timeout: how long the group
	// waits for a silent member before moving its tasks, and so most of
	// the time a crash takes to detect when nobody reports it (a
	// Supervisor removes the members of the instances it crashes at once;
	// see Supervisor.Crash). Default 10 s (Kafka Streams' is
	// 45 s); the embedded broker accepts values down to 500 ms. The
	// larger of SessionTimeout and
	// TransactionTimeout bounds every other wait on the broker (an
	// at-least-once commit, a restore that receives nothing, leaving the
	// group): when it passes the App gives its tasks up and joins again.
	SessionTimeout time.Duration

	// HeartbeatInterval is how often a member tells the group it is
	// alive, and so how late it learns that a rebalance began: a member
	// removed by a Supervisor rebalances the group at once, but the
	// others join only at their next heartbeat. Default
	// min(SessionTimeout/5, 250 ms) where Kafka Streams heartbeats every
	// 3 s: four small requests a second per member buy a failover that
	// starts within a quarter of a second. It must be below
	// SessionTimeout.
	HeartbeatInterval time.Duration

	// StandbyReplicas is how many hot standby copies of each stateful
	// task other instances keep, following its changelogs, so that a
	// failover replays only what the standby had not applied. Default 0.
	StandbyReplicas int

	// AcceptableRecoveryLag is how many changelog records an instance may
	// lack of a task and still count as caught up on it: the assignor
	// gives a stateful task only to a caught-up instance when one exists,
	// and warms the others up first. Default 10,000, as in Kafka Streams.
	AcceptableRecoveryLag int64

	// MaxWarmupReplicas bounds the warm-up replicas (standbys that
	// restore a task's state on the instance that should run it) placed
	// at once across the group. Default 2.
	MaxWarmupReplicas int

	// ProbingRebalanceInterval is how long after placing warm-ups the
	// group rebalances again, to move the actives whose warm-ups caught
	// up. Default 1 minute (Kafka Streams: 10 minutes; a Braid rebalance
	// keeps every task's state open, so it costs little).
	ProbingRebalanceInterval time.Duration

	// StateCleanupDelay is how long the state directory of a task this
	// instance neither runs nor keeps a replica of stays on disk after the
	// task left, as Kafka Streams' state.cleanup.delay.ms: a task assigned
	// back within it finds its state and restores only what it lacks;
	// past it the directory is deleted, store by store, never one that is
	// open. The App checks every half delay. Default 10 minutes;
	// StateCleanupDisabled (-1) keeps every directory. See cleanup.go.
	StateCleanupDelay time.Duration

	// RebalanceProtocol defaults to RebalanceCooperative. Every instance
	// of an application must use the same one: a cooperative leader
	// withholds a moving task until its eager owner has revoked it, but
	// an eager leader hands a task out at once, and a cooperative owner
	// would run it until it learns of the move.
	RebalanceProtocol RebalanceProtocol

	// ApplicationServer is the host:port where this instance answers
	// interactive queries (Kafka's application.server); every member
	// learns the others' in the group metadata, and QueryMetadata names
	// them. A Runner serves its instances' stores there (see
	// runtime/storeserver); an App alone only advertises it. Optional.
	ApplicationServer string

	// RackTags are this instance's rack or zone tags, e.g.
	// {"zone": "eu-west-1a"}. When instances have tags, the assignor puts
	// a task's standbys on instances whose tags differ from its active's.
	RackTags map[string]string

	// CacheMaxBytes bounds the record caches of all the instance's tasks
	// together, like Kafka Streams' statestore.cache.max.bytes. Default
	// 10 MiB; negative turns caching off for every store.
	CacheMaxBytes int64

	// StoreBlockCacheBytes is the pebble block cache of each store, its
	// own: an instance with many stores can hold up to this much for
	// each, though pebble takes the memory only as blocks are cached.
	// Default 64 MiB (state.DefaultBlockCacheBytes, which says why: the
	// measured cost of pebble's 8 MB, and Kafka Streams' 50 MB per store).
	StoreBlockCacheBytes int64

	// RepartitionPurgeInterval is how often committed records are
	// deleted from repartition topics. Default 30 s, as in Kafka Streams.
	RepartitionPurgeInterval time.Duration

	// ReplicationFactor of the topics the App (changelogs, repartition
	// topics) and its Runner (sink topics) create. Default 0: decided
	// from the cluster's metadata at start, min(3, brokers)
	// (DefaultReplicationFactor). A topic created with 3 or more also
	// gets min.insync.replicas=2. Kafka Streams' default is the broker's
	// default.replication.factor, often 1: see docs/differences.md. A factor above
	// the brokers fails the App with a *ReplicationFactorError naming the
	// topic; an existing topic of another factor is left as it is, with a
	// warning.
	ReplicationFactor int

	// NodeMetrics makes every task count the records each processor node
	// receives and forwards (TaskStats.Nodes), for live views of the
	// topology. It costs an indirect call per record per edge; off by
	// default.
	NodeMetrics bool

	// Hooks receive the App's events; see Hook.
	Hooks []Hook

	// Logger receives the App's log. Default: slog.Default().
	Logger *slog.Logger

	// ClientOptions are extra franz-go options for the App's client, for
	// TLS, SASL, compression and tuning; they override the App's tuning
	// defaults (fetch sizes, linger, batch size). Options the App relies
	// on (group, topics, balancer, offsets, callbacks) cannot be changed.
	ClientOptions []kgo.Opt

	// Snapshots, when its URL is set, keeps snapshots of the App's logged
	// stores in a blob store, from which a store with no usable local
	// state restores before replaying the rest of its changelog (see
	// SnapshotConfig). Off by default.
	Snapshots SnapshotConfig
}

var applicationIDPattern = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// WithDefaults returns a copy of c with every unset field at its default:
// the settings an App made from c runs with.
func (c Config) WithDefaults() Config {
	if c.InstanceID == "" {
		host, _ := os.Hostname()
		c.InstanceID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.StateDir == "" {
		c.StateDir = filepath.Join(os.TempDir(), "braid-state")
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = 30 * time.Second
		if c.ProcessingGuarantee == ExactlyOnce {
			c.CommitInterval = 100 * time.Millisecond
		}
	}
	if c.TransactionTimeout == 0 {
		c.TransactionTimeout = 10 * time.Second
	}
	if c.DefaultKeySerde == nil {
		c.DefaultKeySerde = Bytes
	}
	if c.DefaultValueSerde == nil {
		c.DefaultValueSerde = Bytes
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.HeartbeatInterval == 0 && c.SessionTimeout > 0 {
		c.HeartbeatInterval = min(c.SessionTimeout/5, 250*time.Millisecond)
	}
	if c.AcceptableRecoveryLag == 0 {
		c.AcceptableRecoveryLag = 10_000
	}
	if c.MaxWarmupReplicas == 0 {
		c.MaxWarmupReplicas = 2
	}
	if c.ProbingRebalanceInterval == 0 {
		c.ProbingRebalanceInterval = time.Minute
	}
	if c.StateCleanupDelay == 0 {
		c.StateCleanupDelay = 10 * time.Minute
	}
	if c.RepartitionPurgeInterval == 0 {
		c.RepartitionPurgeInterval = 30 * time.Second
	}
	if c.CacheMaxBytes == 0 {
		c.CacheMaxBytes = 10 << 20
	}
	if c.StoreBlockCacheBytes == 0 {
		c.StoreBlockCacheBytes = state.DefaultBlockCacheBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Snapshots = c.Snapshots.withDefaults()
	return c
}

// Validate reports every problem of the configuration at once, joined with
// errors.Join, after filling in defaults. It returns nil when the
// configuration is usable.
func (c Config) Validate() error {
	// The default InstanceID is host-pid: checked before it is filled in.
	defaultInstance := c.InstanceID == ""
	c = c.WithDefaults()
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.StaticMembership && defaultInstance {
		bad("StaticMembership", "needs an explicit InstanceID: the default (%q) names the process, and a restart as a new process would join as a new member", c.InstanceID)
	}
	switch {
	case c.ApplicationID == "":
		bad("ApplicationID", "is required")
	case len(c.ApplicationID) > 200:
		bad("ApplicationID", "is %d characters long, at most 200 fit in topic names", len(c.ApplicationID))
	case !applicationIDPattern.MatchString(c.ApplicationID):
		bad("ApplicationID", "%q may contain only letters, digits, '.', '_' and '-'", c.ApplicationID)
	}
	if len(c.Brokers) == 0 {
		bad("Brokers", "at least one bootstrap address is required")
	}
	for i, b := range c.Brokers {
		if b == "" {
			bad("Brokers", "address %d is empty", i)
		}
	}
	if c.CommitInterval < 0 {
		bad("CommitInterval", "%v is negative", c.CommitInterval)
	}
	switch c.ProcessingGuarantee {
	case AtLeastOnce:
	case ExactlyOnce:
		if c.TransactionTimeout > 0 && c.TransactionTimeout <= c.CommitInterval {
			bad("TransactionTimeout", "%v must exceed CommitInterval (%v): a transaction stays open for a commit interval", c.TransactionTimeout, c.CommitInterval)
		}
	default:
		bad("ProcessingGuarantee", "unknown value %d", int(c.ProcessingGuarantee))
	}
	if c.RebalanceProtocol != RebalanceCooperative && c.RebalanceProtocol != RebalanceEager {
		bad("RebalanceProtocol", "unknown value %d", int(c.RebalanceProtocol))
	}
	for _, h := range []struct {
		field string
		value ErrorHandling
	}{{"DeserializationErrors", c.DeserializationErrors}, {"ProcessingErrors", c.ProcessingErrors}} {
		if h.value != FailOnError && h.value != LogAndContinue {
			bad(h.field, "unknown value %d", int(h.value))
		}
	}
	if c.DeadLetterTopic != "" {
		if err := validTopicName(c.DeadLetterTopic); err != nil {
			bad("DeadLetterTopic", "%v", err)
		}
	}
	if c.MaxPollRecords < 0 {
		bad("MaxPollRecords", "%d is negative", c.MaxPollRecords)
	}
	if c.MaxTaskIdle < 0 && c.MaxTaskIdle != MaxTaskIdleDisabled {
		bad("MaxTaskIdle", "%v is negative; MaxTaskIdleDisabled (-1) turns idling off", c.MaxTaskIdle)
	}
	if c.TransactionTimeout < 0 {
		bad("TransactionTimeout", "%v is negative", c.TransactionTimeout)
	}
	if c.HeartbeatInterval < 0 {
		bad("HeartbeatInterval", "%v is negative", c.HeartbeatInterval)
	} else if c.HeartbeatInterval > 0 && c.SessionTimeout > 0 && c.HeartbeatInterval >= c.SessionTimeout {
		bad("HeartbeatInterval", "%v is not below SessionTimeout %v", c.HeartbeatInterval, c.SessionTimeout)
	}
	if c.SessionTimeout < 0 {
		bad("SessionTimeout", "%v is negative", c.SessionTimeout)
	}
	if c.StandbyReplicas < 0 {
		bad("StandbyReplicas", "%d is negative", c.StandbyReplicas)
	}
	if c.AcceptableRecoveryLag < 0 {
		bad("AcceptableRecoveryLag", "%d is negative", c.AcceptableRecoveryLag)
	}
	if c.MaxWarmupReplicas < 0 {
		bad("MaxWarmupReplicas", "%d is negative", c.MaxWarmupReplicas)
	}
	if c.ProbingRebalanceInterval < 0 {
		bad("ProbingRebalanceInterval", "%v is negative", c.ProbingRebalanceInterval)
	}
	if c.StateCleanupDelay < 0 && c.StateCleanupDelay != StateCleanupDisabled {
		bad("StateCleanupDelay", "%v is negative; StateCleanupDisabled (-1) turns cleanup off", c.StateCleanupDelay)
	}
	if c.ApplicationServer != "" {
		if _, port, err := net.SplitHostPort(c.ApplicationServer); err != nil {
			bad("ApplicationServer", "%q is not host:port: %v", c.ApplicationServer, err)
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			bad("ApplicationServer", "%q: port %q is not a number from 1 to 65535", c.ApplicationServer, port)
		}
	}
	for k := range c.RackTags {
		if k == "" {
			bad("RackTags", "a tag has an empty name")
		}
	}
	if c.RepartitionPurgeInterval < 0 {
		bad("RepartitionPurgeInterval", "%v is negative", c.RepartitionPurgeInterval)
	}
	if c.StoreBlockCacheBytes < 0 {
		bad("StoreBlockCacheBytes", "%d is negative", c.StoreBlockCacheBytes)
	}
	if c.ReplicationFactor < 0 || c.ReplicationFactor > 32767 {
		bad("ReplicationFactor", "%d is out of range (0 for min(3, brokers), or 1 to 32767)", c.ReplicationFactor)
	}
	for i, h := range c.Hooks {
		if !implementsAny(h) {
			bad("Hooks", "hook %d (%T) implements no hook interface", i, h)
		}
	}
	errs = append(errs, c.Snapshots.problems()...)
	return errors.Join(errs...)
}

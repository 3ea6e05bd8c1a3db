package streams

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// RunnerFlags are the command-line flags of a process that runs a
// topology with a Runner: `braid run` and the programs `braid export`
// writes define them here, so that both take the same flags, with the
// same defaults and meaning.
type RunnerFlags struct {
	brokers, appID, instanceID, stateDir, guarantee *string
	advertise, queryToken, queryListen, snapshots   *string
	instances, standbys, replication                *int
	sessionTimeout, commitInterval, snapshotEvery   *time.Duration
	snapshotRecords                                 *int64
	static                                          *bool
}

// DefineRunnerFlags defines the Runner's flags on fs: --brokers,
// --app-id (default appID, described by appIDUsage), --instance-id,
// --instances, --state-dir, --guarantee, --standbys, --session-timeout,
// --commit-interval, --static-membership, --replication-factor,
// --advertise, --query-listen, --query-token (default
// $BRAID_QUERY_TOKEN), --snapshots, --snapshot-interval and
// --snapshot-records. Config reads them once fs is parsed.
func DefineRunnerFlags(fs *flag.FlagSet, appID, appIDUsage string) *RunnerFlags {
	f := &RunnerFlags{}
	f.brokers = fs.String("brokers", "127.0.0.1:9092", "Kafka bootstrap addresses, comma-separated")
	f.appID = fs.String("app-id", appID, appIDUsage)
	f.instanceID = fs.String("instance-id", "", "id of this process's instance, or prefix of its instances' ids with --instances N > 1 (<id>-1 ... <id>-N); default: the host name")
	f.instances = fs.Int("instances", 1, "instances to run in this process")
	f.stateDir = fs.String("state-dir", "", "directory of the instances' state (default: ./braid-state/<app-id>)")
	f.guarantee = fs.String("guarantee", AtLeastOnce.String(), "processing guarantee: "+AtLeastOnce.String()+" or "+ExactlyOnce.String())
	f.standbys = fs.Int("standbys", 0, "standby replicas of each stateful task, kept by other instances")
	f.sessionTimeout = fs.Duration("session-timeout", 0, "group session timeout (0: the runtime's default)")
	f.commitInterval = fs.Duration("commit-interval", 0, "how often offsets are committed (0: the runtime's default for the guarantee)")
	f.static = fs.Bool("static-membership", false, "join as a static member (group.instance.id = the instance id): a restart within the session timeout gets the same tasks back without a rebalance; give a stable --instance-id, such as a StatefulSet pod's name")
	f.replication = fs.Int("replication-factor", 0, "replication factor of the topics the process creates (changelogs, repartition, sink and telemetry topics); 0: min(3, the cluster's brokers), with min.insync.replicas=2 at 3 or more")
	f.advertise = fs.String("advertise", "", "host:port this process answers store lookups on, for its whole group (Kafka's application.server); other processes and braid serve reach it there. A non-loopback address needs --query-token")
	f.queryListen = fs.String("query-listen", "", "host:port the store server listens on, when not --advertise's (e.g. 0.0.0.0:7070 in a container advertised by its pod's name)")
	f.queryToken = fs.String("query-token", "", "bearer token store lookups must carry, and that this process sends with those it forwards (default $"+QueryTokenEnv+")")
	f.snapshots = fs.String("snapshots", "", "blob store to keep snapshots of the stores in, from which a store with no local state restores before replaying the rest of its changelog: file:///dir or s3://bucket?endpoint=...&use_path_style=true (default: none; Config.Snapshots)")
	f.snapshotEvery = fs.Duration("snapshot-interval", 0, "with snapshots on (--snapshots, or a deployment's), snapshot a store at its first commit this long after its last snapshot (0: the runtime's default, 10m; Snapshots.Interval)")
	f.snapshotRecords = fs.Int64("snapshot-records", 0, "with snapshots on, or at its first commit once its changelog grew by this many records since its last snapshot (0: the runtime's default, 1,000,000; -1: by --snapshot-interval only; Snapshots.Records)")
	return f
}

// QueryTokenEnv is the environment variable --query-token defaults to, so
// that the token need not show in the process list.
const QueryTokenEnv = "BRAID_QUERY_TOKEN"

// Config returns the RunnerConfig the parsed flags give, or every flag
// whose value is wrong, each named. Fields no flag sets (Out, Hooks,
// Logger, ...) are the caller's to fill.
func (f *RunnerFlags) Config() (RunnerConfig, error) {
	var errs []error
	g, err := ParseGuarantee(*f.guarantee)
	if err != nil {
		errs = append(errs, fmt.Errorf("--guarantee %w", err))
	}
	if *f.instances < 1 {
		errs = append(errs, fmt.Errorf("--instances %d: must be at least 1", *f.instances))
	}
	if *f.replication < 0 {
		errs = append(errs, fmt.Errorf("--replication-factor %d: must be 0 (the default from the cluster's size) or more", *f.replication))
	}
	snapshots := SnapshotConfig{URL: *f.snapshots, Interval: *f.snapshotEvery, Records: *f.snapshotRecords}
	errs = append(errs, snapshots.flagProblems()...)
	seeds := SplitBrokers(*f.brokers)
	if len(seeds) == 0 {
		errs = append(errs, errors.New("--brokers is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return RunnerConfig{}, err
	}
	return RunnerConfig{
		Config: Config{
			ApplicationID: *f.appID, Brokers: seeds, StateDir: *f.stateDir,
			CommitInterval: *f.commitInterval, SessionTimeout: *f.sessionTimeout,
			ProcessingGuarantee: g, StandbyReplicas: *f.standbys, StaticMembership: *f.static,
			ApplicationServer: *f.advertise, ReplicationFactor: *f.replication,
			Snapshots: snapshots,
		},
		InstanceID:  *f.instanceID,
		Instances:   *f.instances,
		QueryToken:  cmp.Or(*f.queryToken, os.Getenv(QueryTokenEnv)),
		QueryListen: *f.queryListen,
	}, nil
}

package streams_test

import (
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// configStateHook implements one hook interface.
type configStateHook struct{}

func (configStateHook) OnStateChange(streams.StateChange) {}

// configNotAHook implements none.
type configNotAHook struct{}

func goodConfig() streams.Config {
	return streams.Config{ApplicationID: "orders-app.v2_x", Brokers: []string{"127.0.0.1:9092"}}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		modify func(*streams.Config)
		// want lists substrings of the error, each naming a problem;
		// none means the config is valid.
		want []string
	}{
		{name: "minimal", modify: func(*streams.Config) {}},
		{
			name: "everything set",
			modify: func(c *streams.Config) {
				c.InstanceID = "i-1"
				c.StateDir = t.TempDir()
				c.CommitInterval = time.Second
				c.ProcessingGuarantee = streams.AtLeastOnce
				c.DefaultKeySerde, c.DefaultValueSerde = streams.String, streams.JSON
				c.DeserializationErrors = streams.LogAndContinue
				c.ProcessingErrors = streams.LogAndContinue
				c.MaxPollRecords = 500
				c.SessionTimeout = 6 * time.Second
				c.ReplicationFactor = 3
				c.Hooks = []streams.Hook{configStateHook{}}
			},
		},
		{
			name: "snapshots on",
			modify: func(c *streams.Config) {
				c.Snapshots = streams.SnapshotConfig{URL: "s3://bucket?endpoint=http://127.0.0.1:9000&use_path_style=true", Interval: time.Minute, Records: -1, Keep: 2, BytesPerSecond: -1}
			},
		},
		{
			name: "every snapshot problem at once",
			modify: func(c *streams.Config) {
				c.Snapshots = streams.SnapshotConfig{URL: "gs://bucket", Interval: -time.Second, Records: -2, Keep: -1, BytesPerSecond: -5}
			},
			want: []string{
				`Snapshots.URL: "gs://bucket": scheme "gs" is not file or s3`,
				"Snapshots.Interval: -1s is negative",
				"Snapshots.Records: -2 is negative",
				"Snapshots.Keep: -1 is negative",
				"Snapshots.BytesPerSecond: -5 is negative",
			},
		},
		{
			name:   "snapshots in a relative directory",
			modify: func(c *streams.Config) { c.Snapshots.URL = "file://snapshots" },
			want:   []string{`Snapshots.URL: "file://snapshots": a file URL needs an absolute path`},
		},
		{
			name: "every problem at once",
			modify: func(c *streams.Config) {
				c.ApplicationID = ""
				c.Brokers = nil
				c.CommitInterval = -time.Second
				c.TransactionTimeout = -time.Second
				c.Hooks = []streams.Hook{configStateHook{}, configNotAHook{}}
			},
			want: []string{
				"ApplicationID: is required",
				"Brokers: at least one",
				"CommitInterval: -1s is negative",
				"TransactionTimeout: -1s is negative",
				"Hooks: hook 1 (streams_test.configNotAHook) implements no hook interface",
			},
		},
		{
			name: "static membership with an explicit instance id",
			modify: func(c *streams.Config) {
				c.StaticMembership = true
				c.InstanceID = "orders-1"
			},
		},
		{
			// The default InstanceID names the process: a restart
			// would join as a new member.
			name:   "static membership with the default instance id",
			modify: func(c *streams.Config) { c.StaticMembership = true },
			want:   []string{"StaticMembership: needs an explicit InstanceID"},
		},
		{
			name: "static membership among other problems",
			modify: func(c *streams.Config) {
				c.StaticMembership = true
				c.SessionTimeout = -time.Second
			},
			want: []string{"StaticMembership: needs an explicit InstanceID", "SessionTimeout: -1s is negative"},
		},
		{
			name: "a heartbeat interval not below the session timeout",
			modify: func(c *streams.Config) {
				c.SessionTimeout = time.Second
				c.HeartbeatInterval = time.Second
			},
			want: []string{"HeartbeatInterval: 1s is not below SessionTimeout 1s"},
		},
		{
			name:   "a negative heartbeat interval",
			modify: func(c *streams.Config) { c.HeartbeatInterval = -time.Second },
			want:   []string{"HeartbeatInterval: -1s is negative"},
		},
		{
			name:   "exactly-once with its defaults",
			modify: func(c *streams.Config) { c.ProcessingGuarantee = streams.ExactlyOnce },
		},
		{
			name: "exactly-once with a transaction timeout shorter than a commit interval",
			modify: func(c *streams.Config) {
				c.ProcessingGuarantee = streams.ExactlyOnce
				c.CommitInterval = 5 * time.Second
				c.TransactionTimeout = 2 * time.Second
			},
			want: []string{"TransactionTimeout: 2s must exceed CommitInterval (5s)"},
		},
		{
			name:   "application id with a space",
			modify: func(c *streams.Config) { c.ApplicationID = "my app" },
			want:   []string{`ApplicationID: "my app" may contain only letters, digits`},
		},
		{
			name:   "application id with a slash",
			modify: func(c *streams.Config) { c.ApplicationID = "a/b" },
			want:   []string{`"a/b"`},
		},
		{
			name:   "application id too long",
			modify: func(c *streams.Config) { c.ApplicationID = strings.Repeat("a", 201) },
			want:   []string{"ApplicationID: is 201 characters long"},
		},
		{
			name:   "empty broker address",
			modify: func(c *streams.Config) { c.Brokers = []string{"127.0.0.1:9092", ""} },
			want:   []string{"Brokers: address 1 is empty"},
		},
		{
			name:   "unknown guarantee",
			modify: func(c *streams.Config) { c.ProcessingGuarantee = 7 },
			want:   []string{"ProcessingGuarantee: unknown value 7"},
		},
		{
			name:   "unknown rebalance protocol",
			modify: func(c *streams.Config) { c.RebalanceProtocol = 3 },
			want:   []string{"RebalanceProtocol: unknown value 3"},
		},
		{
			name: "unknown error handling",
			modify: func(c *streams.Config) {
				c.DeserializationErrors = 5
				c.ProcessingErrors = -1
			},
			want: []string{"DeserializationErrors: unknown value 5", "ProcessingErrors: unknown value -1"},
		},
		{
			name: "negative numbers",
			modify: func(c *streams.Config) {
				c.MaxPollRecords = -1
				c.SessionTimeout = -time.Millisecond
				c.StateCleanupDelay = -time.Second
			},
			want: []string{"MaxPollRecords: -1 is negative", "SessionTimeout: -1ms is negative",
				"StateCleanupDelay: -1s is negative; StateCleanupDisabled (-1) turns cleanup off"},
		},
		{
			name: "high availability settings",
			modify: func(c *streams.Config) {
				c.StandbyReplicas = -1
				c.AcceptableRecoveryLag = -5
				c.MaxWarmupReplicas = -2
				c.ProbingRebalanceInterval = -time.Second
				c.ApplicationServer = "localhost"
				c.RackTags = map[string]string{"": "a"}
			},
			want: []string{
				"StandbyReplicas: -1 is negative", "AcceptableRecoveryLag: -5 is negative",
				"MaxWarmupReplicas: -2 is negative", "ProbingRebalanceInterval: -1s is negative",
				`ApplicationServer: "localhost" is not host:port`, "RackTags: a tag has an empty name",
			},
		},
		{
			name:   "application server port out of range",
			modify: func(c *streams.Config) { c.ApplicationServer = "10.0.0.1:70000" },
			want:   []string{`ApplicationServer: "10.0.0.1:70000": port "70000" is not a number from 1 to 65535`},
		},
		{
			name: "high availability settings valid",
			modify: func(c *streams.Config) {
				c.StandbyReplicas, c.ApplicationServer = 2, "127.0.0.1:7070"
				c.RackTags = map[string]string{"zone": "eu-1a"}
			},
		},
		{
			name:   "replication factor negative",
			modify: func(c *streams.Config) { c.ReplicationFactor = -1 },
			want:   []string{"ReplicationFactor: -1 is out of range"},
		},
		{
			name:   "replication factor too large",
			modify: func(c *streams.Config) { c.ReplicationFactor = 40000 },
			want:   []string{"ReplicationFactor: 40000 is out of range"},
		},
		{
			name:   "replication factor default",
			modify: func(c *streams.Config) { c.ReplicationFactor = 0 },
		},
		{
			name:   "nil hook",
			modify: func(c *streams.Config) { c.Hooks = []streams.Hook{nil} },
			want:   []string{"hook 0 (<nil>) implements no hook interface"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := goodConfig()
			tt.modify(&cfg)
			err := cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error mentioning %q", tt.want)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() error does not mention %q:\n%v", want, err)
				}
			}
			// One line per problem, so each can be read on its own.
			if got := strings.Count(err.Error(), "\n") + 1; got != len(tt.want) {
				t.Errorf("Validate() reported %d problems, want %d:\n%v", got, len(tt.want), err)
			}

			// New refuses the same config with the same error.
			topo := configTestTopology(t)
			app, newErr := streams.New(topo, cfg)
			if newErr == nil {
				t.Fatal("New accepted a config that Validate refuses")
			}
			if app != nil {
				t.Errorf("New returned an App along with the error %v", newErr)
			}
			if !strings.Contains(newErr.Error(), err.Error()) {
				t.Errorf("New error %q does not carry Validate's %q", newErr, err)
			}
		})
	}
}

// TestConfigValidateChecksTheDefaults checks that Validate judges the
// configuration New would run with, defaults filled in: a field left at
// zero takes part in the checks with its default value, and a value that
// is only wrong against another field's default is refused.
func TestConfigValidateChecksTheDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*streams.Config)
		want string // "" for valid
	}{
		// Exactly-once commits every 100 ms by default: a transaction
		// timeout of 50 ms is shorter than a transaction stays open.
		{"default exactly-once commit interval", func(c *streams.Config) {
			c.ProcessingGuarantee = streams.ExactlyOnce
			c.TransactionTimeout = 50 * time.Millisecond
		}, "TransactionTimeout: 50ms must exceed CommitInterval (100ms)"},
		// The default transaction timeout is 10 s.
		{"default transaction timeout", func(c *streams.Config) {
			c.ProcessingGuarantee = streams.ExactlyOnce
			c.CommitInterval = 20 * time.Second
		}, "TransactionTimeout: 10s must exceed CommitInterval (20s)"},
		// At-least-once commits every 30 s by default and has no
		// transactions: the same timeout is no problem there.
		{"at-least-once", func(c *streams.Config) {
			c.TransactionTimeout = 50 * time.Millisecond
		}, ""},
		{"every default", func(c *streams.Config) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := streams.Config{ApplicationID: "app", Brokers: []string{"b:1"}}
			tc.set(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestNewGoodConfig(t *testing.T) {
	app, err := streams.New(configTestTopology(t), goodConfig())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got := app.State(); got != streams.Created {
		t.Errorf("State() = %v, want %v", got, streams.Created)
	}
}

func TestNewNilTopology(t *testing.T) {
	if _, err := streams.New(nil, goodConfig()); err == nil || !strings.Contains(err.Error(), "topology is nil") {
		t.Errorf("New(nil, cfg) = %v, want an error saying the topology is nil", err)
	}
}

func TestGuaranteeAndErrorHandlingStrings(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{streams.AtLeastOnce.String(), "at-least-once"},
		{streams.ExactlyOnce.String(), "exactly-once"},
		{streams.Guarantee(9).String(), "Guarantee(9)"},
		{streams.FailOnError.String(), "fail"},
		{streams.LogAndContinue.String(), "log-and-continue"},
		{streams.ErrorHandling(-3).String(), "ErrorHandling(-3)"},
	} {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

func configTestTopology(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	b.Stream([]string{"in"}).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

package process

import (
	"errors"
	"flag"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/clientconfig"
	"github.com/braidstream/braid/runtime/control"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/braidstream/braid/runtime/telemetry"
)

// Flags are the command-line flags of a process that runs a design:
// `braid run` and the programs `braid export` writes define them here, so
// that both take the same flags, with the same defaults and meaning.
type Flags struct {
	runner         *streams.RunnerFlags
	control        *control.Flags
	telemetryTopic *string
	client         *clientconfig.Flags
	fs             *flag.FlagSet
}

// DefineFlags defines on fs the Runner's flags (streams.DefineRunnerFlags,
// with appID and appIDUsage for --app-id), --telemetry-topic (default
// telemetry.DefaultTopic; empty: report nowhere) and the control flags
// (control.DefineFlags: --control-topic, --control-secret-file, and
// $BRAID_CONTROL_SECRET without it) and --client-config
// (clientconfig.DefineFlags: the Kafka client properties of a cluster
// that needs TLS or SASL, and the BRAID_KAFKA_ variables). Config reads
// them once fs is parsed.
func DefineFlags(fs *flag.FlagSet, appID, appIDUsage string) *Flags {
	return &Flags{fs: fs, client: clientconfig.DefineFlags(fs),
		runner: streams.DefineRunnerFlags(fs, appID, appIDUsage),
		telemetryTopic: fs.String("telemetry-topic", telemetry.DefaultTopic,
			"topic the instances report their state and events on, four times a second, for braid serve to show; empty: report nowhere"),
		control: control.DefineFlags(fs),
	}
}

// Config returns the Config the parsed flags give, the control secret
// and the client configuration read, or every flag or property whose
// value is wrong, each named. The client configuration's options are in
// Runner.Config.ClientOptions, and its bootstrap.servers are the brokers
// unless --brokers was given. Fields no flag sets (Design, Runner.Out,
// Runner.Config.Hooks, ...) are the caller's to fill.
func (f *Flags) Config() (Config, error) {
	rc, rerr := f.runner.Config()
	topic, secret, cerr := f.control.Values()
	client, lerr := f.client.Load()
	var oerr error
	if lerr == nil {
		var opts []kgo.Opt
		if opts, oerr = client.Opts(); oerr == nil {
			rc.Config.ClientOptions = append(rc.Config.ClientOptions, opts...)
		}
	}
	if err := errors.Join(rerr, cerr, lerr, oerr); err != nil {
		return Config{}, err
	}
	if len(client.BootstrapServers) > 0 && !f.brokersGiven() {
		rc.Config.Brokers = client.BootstrapServers
	}
	return Config{Runner: rc, TelemetryTopic: *f.telemetryTopic, ControlTopic: topic, ControlSecret: secret, Client: client}, nil
}

// brokersGiven reports whether the command line set --brokers.
func (f *Flags) brokersGiven() bool {
	given := false
	f.fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "brokers" })
	return given
}

package process

import (
	"errors"
	"flag"

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
}

// DefineFlags defines on fs the Runner's flags (streams.DefineRunnerFlags,
// with appID and appIDUsage for --app-id), --telemetry-topic (default
// telemetry.DefaultTopic; empty: report nowhere) and the control flags
// (control.DefineFlags: --control-topic, --control-secret-file, and
// $BRAID_CONTROL_SECRET without it). Config reads them once fs is
// parsed.
func DefineFlags(fs *flag.FlagSet, appID, appIDUsage string) *Flags {
	return &Flags{
		runner: streams.DefineRunnerFlags(fs, appID, appIDUsage),
		telemetryTopic: fs.String("telemetry-topic", telemetry.DefaultTopic,
			"topic the instances report their state and events on, four times a second, for braid serve to show; empty: report nowhere"),
		control: control.DefineFlags(fs),
	}
}

// Config returns the Config the parsed flags give, the control secret
// read, or every flag whose value is wrong, each named. Fields no flag
// sets (Design, Runner.Out, Runner.Config.Hooks, ...) are the caller's
// to fill.
func (f *Flags) Config() (Config, error) {
	rc, rerr := f.runner.Config()
	topic, secret, cerr := f.control.Values()
	if err := errors.Join(rerr, cerr); err != nil {
		return Config{}, err
	}
	return Config{Runner: rc, TelemetryTopic: *f.telemetryTopic, ControlTopic: topic, ControlSecret: secret}, nil
}

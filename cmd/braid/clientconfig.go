package main

import (
	"context"
	"flag"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/clientconfig"
	"github.com/braidstream/braid/runtime/streams"
)

// clientSettings are --client-config and the BRAID_KAFKA_ variables
// (the runtime's, clientconfig.DefineFlags) of a command that makes
// Kafka clients of its own (gen, serve); run takes them through
// process.DefineFlags.
type clientSettings struct {
	flags *clientconfig.Flags
	cfg   clientconfig.Config
	opts  []kgo.Opt
}

func clientFlags(fs *flag.FlagSet) *clientSettings {
	return &clientSettings{flags: clientconfig.DefineFlags(fs)}
}

// load reads the client configuration and makes its options (reading
// the truststore and keystore); every problem, each property named with
// its file:line or variable.
func (c *clientSettings) load() (err error) {
	if c.cfg, err = c.flags.Load(); err != nil {
		return err
	}
	c.opts, err = c.cfg.Opts()
	return err
}

// brokers are the seed brokers: the --brokers flag named brokersFlag
// when the command line gives it, else bootstrap.servers, else the
// flag's default value.
func (c *clientSettings) brokers(fs *flag.FlagSet, brokersFlag string) []string {
	if !flagSet(fs, brokersFlag) && len(c.cfg.BootstrapServers) > 0 {
		return c.cfg.BootstrapServers
	}
	return streams.SplitBrokers(fs.Lookup(brokersFlag).Value.String())
}

// check connects to seeds once when there is a client configuration,
// so that a refused login or an untrusted certificate ends the command
// at once (clientconfig.Config.Check).
func (c *clientSettings) check(ctx context.Context, seeds []string) error {
	if c.cfg.IsZero() {
		return nil
	}
	return c.cfg.Check(ctx, seeds)
}

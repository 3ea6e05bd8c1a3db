package main

import (
	"flag"

	"github.com/braidstream/braid/runtime/control"
)

// controlSettings are the flags of the control topic (the runtime's,
// control.DefineFlags), which serve sends commands on and run listens
// to.
type controlSettings struct {
	topic  string
	secret []byte
	flags  *control.Flags
}

func controlFlags(fs *flag.FlagSet) *controlSettings {
	return &controlSettings{flags: control.DefineFlags(fs)}
}

// load reads the topic and the secret.
func (c *controlSettings) load() (err error) {
	c.topic, c.secret, err = c.flags.Values()
	return err
}

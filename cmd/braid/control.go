package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/braidstream/braid/control"
)

// controlEnv holds the control secret when no --control-secret-file is
// given.
const controlEnv = "BRAID_CONTROL_SECRET"

// controlSettings are the flags of the control topic, which serve sends
// commands on and run listens to.
type controlSettings struct {
	topic, secretFile string
	secret            []byte
}

func controlFlags(fs *flag.FlagSet) *controlSettings {
	c := &controlSettings{}
	fs.StringVar(&c.topic, "control-topic", control.DefaultTopic, "topic of the crash, stop and start commands to instances of braid run processes")
	fs.StringVar(&c.secretFile, "control-secret-file", "", "file holding the secret that signs (serve) and verifies (run) those commands (default $"+controlEnv+"); without one, none is sent or carried out")
	return c
}

// load reads the secret.
func (c *controlSettings) load() error {
	if c.secretFile == "" {
		c.secret = []byte(os.Getenv(controlEnv))
		return nil
	}
	data, err := os.ReadFile(c.secretFile)
	if err != nil {
		return fmt.Errorf("--control-secret-file: %w", err)
	}
	c.secret = bytes.TrimSpace(data)
	if len(c.secret) == 0 {
		return fmt.Errorf("--control-secret-file %s: the file is empty", c.secretFile)
	}
	return nil
}

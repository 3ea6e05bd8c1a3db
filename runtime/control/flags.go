package control

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

// SecretEnv is the environment variable that holds the control secret
// when no --control-secret-file is given.
const SecretEnv = "BRAID_CONTROL_SECRET"

// Flags are the control topic's command-line flags, which a server that
// sends commands and a process that carries them out both take, with the
// same names, defaults and meaning.
type Flags struct {
	topic, secretFile *string
}

// DefineFlags defines --control-topic (default DefaultTopic) and
// --control-secret-file on fs. Values reads them once fs is parsed.
func DefineFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		topic: fs.String("control-topic", DefaultTopic, "topic of the crash, stop and start commands a server sends to instances of other processes"),
		secretFile: fs.String("control-secret-file", "", "file holding the secret that signs (server) and verifies (process) those commands (default $"+SecretEnv+
			"); without one, none is sent or carried out"),
	}
}

// Values returns the control topic and the secret: the trimmed content
// of --control-secret-file, or $BRAID_CONTROL_SECRET without one (empty
// when unset: no command is signed or carried out). An unreadable or
// empty file is an error naming it.
func (f *Flags) Values() (topic string, secret []byte, err error) {
	if *f.secretFile == "" {
		return *f.topic, []byte(os.Getenv(SecretEnv)), nil
	}
	data, err := os.ReadFile(*f.secretFile)
	if err != nil {
		return "", nil, fmt.Errorf("--control-secret-file: %w", err)
	}
	if secret = bytes.TrimSpace(data); len(secret) == 0 {
		return "", nil, fmt.Errorf("--control-secret-file %s: the file is empty", *f.secretFile)
	}
	return *f.topic, secret, nil
}

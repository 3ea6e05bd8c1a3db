package clientconfig

import (
	"flag"
	"os"
)

// Flags is the --client-config flag, which every command that talks to
// Kafka takes.
type Flags struct {
	path *string
}

// DefineFlags defines --client-config FILE on fs (default
// $BRAID_CLIENT_CONFIG). Load reads it once fs is parsed.
func DefineFlags(fs *flag.FlagSet) *Flags {
	return &Flags{path: fs.String("client-config", "",
		"Kafka client properties file (security.protocol, sasl.*, ssl.*; Apache Kafka's names) for a cluster that needs TLS or SASL (default $"+
			FileEnv+"); "+EnvPrefix+"<PROPERTY> variables override it")}
}

// Path is the file the flag, or $BRAID_CLIENT_CONFIG without it, names.
func (f *Flags) Path() string {
	if *f.path != "" {
		return *f.path
	}
	return os.Getenv(FileEnv)
}

// Load loads the client configuration of the file Path names and the
// process's environment (see Load).
func (f *Flags) Load() (Config, error) {
	return Load(f.Path(), os.Environ())
}

package clientconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
)

// The values of security.protocol.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// The values of sasl.mechanism.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Config is a client configuration: the supported properties of Apache
// Kafka's clients, each field named after its property. The zero Config
// is a plaintext client with no options.
type Config struct {
	// BootstrapServers is bootstrap.servers, split at commas; a
	// command's --brokers flag, when given, wins over it.
	BootstrapServers []string
	// ClientID is client.id.
	ClientID string
	// SecurityProtocol is security.protocol: PLAINTEXT (also for ""),
	// SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	// SASLMechanism is sasl.mechanism: PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512. Required with SASL (Kafka's default, GSSAPI, is not
	// supported).
	SASLMechanism string
	// SASLJAASConfig is sasl.jaas.config, Kafka's JAAS line (a secret):
	// a PlainLoginModule or ScramLoginModule with username and
	// password. Give it or SASLUsername and SASLPassword.
	SASLJAASConfig string
	// SASLUsername and SASLPassword are sasl.username and sasl.password,
	// the simpler alternative to the JAAS line; the password is a secret.
	SASLUsername, SASLPassword string
	// TruststoreLocation is ssl.truststore.location: a PEM file of the
	// CA certificates the brokers' certificates are checked against;
	// empty: the system's.
	TruststoreLocation string
	// TruststoreType and KeystoreType are ssl.truststore.type and
	// ssl.keystore.type: PEM, or empty.
	TruststoreType, KeystoreType string
	// KeystoreLocation is ssl.keystore.location: a PEM file holding the
	// client's private key and its certificate chain, for brokers that
	// authenticate clients with TLS.
	KeystoreLocation string
	// KeyPassword is ssl.key.password (a secret), which decrypts an
	// encrypted private key in the keystore.
	KeyPassword string
	// SkipHostnameVerification is set by an empty
	// ssl.endpoint.identification.algorithm: the broker's certificate
	// must still be trusted, but need not name the host connected to.
	SkipHostnameVerification bool
	// Sources says where each property was set, by property name; a
	// problem names the source.
	Sources map[string]Source
	// Ignored are the properties that were read but mean nothing to
	// Braid (see Ignored).
	Ignored []Property
}

// Ignored are the Java client's properties that a client configuration
// may hold but which Braid does not use: timeouts and backoffs of the
// Java client's network layer, which franz-go and the runtime set
// themselves. They are accepted so that a file written for Java clients
// reads, and listed in Config.Ignored.
var Ignored = []string{
	"client.dns.lookup",
	"connections.max.idle.ms",
	"metadata.max.age.ms",
	"reconnect.backoff.max.ms",
	"reconnect.backoff.ms",
	"request.timeout.ms",
	"retry.backoff.ms",
	"socket.connection.setup.timeout.max.ms",
	"socket.connection.setup.timeout.ms",
}

// secret are the properties whose values are never printed.
var secret = []string{"sasl.jaas.config", "sasl.password", "ssl.key.password"}

// notSupported are known Kafka properties Braid refuses, with why.
var notSupported = map[string]string{
	"ssl.truststore.password":            "a PEM truststore has no password (this is for JKS or PKCS12 stores, which Braid does not read: convert the store to PEM)",
	"ssl.keystore.password":              "a PEM keystore's key is decrypted with ssl.key.password (this is for JKS or PKCS12 stores, which Braid does not read: convert the store to PEM)",
	"ssl.truststore.certificates":        "inline PEM is not supported: put the certificates in a file named by ssl.truststore.location",
	"ssl.keystore.certificate.chain":     "inline PEM is not supported: put the key and chain in a file named by ssl.keystore.location",
	"ssl.keystore.key":                   "inline PEM is not supported: put the key and chain in a file named by ssl.keystore.location",
	"sasl.kerberos.service.name":         "GSSAPI (Kerberos) is not supported",
	"sasl.login.callback.handler.class":  "login callback handlers are not supported (OAUTHBEARER neither)",
	"sasl.client.callback.handler.class": "client callback handlers are not supported",
}

// PropertyError is a problem with one property.
type PropertyError struct {
	// Property is the property's name.
	Property string
	// Source is where it was set (the zero Source for a property set in
	// a Config by hand, or a missing one).
	Source Source
	// Reason says what is wrong; it never holds a secret's value.
	Reason string
}

func (e *PropertyError) Error() string {
	return fmt.Sprintf("%s (%s): %s", e.Property, e.Source, e.Reason)
}

// Load reads the client configuration: the properties file at path (none
// for ""), then the BRAID_KAFKA_ variables of environ, which override
// the file's. Its error lists every problem at once (errors.Join of
// *PropertyError, unreadable files aside): unknown properties, syntax,
// and what Validate finds. With no file and no variable it returns the
// zero Config.
func Load(path string, environ []string) (Config, error) {
	var props []Property
	if path != "" {
		var err error
		if props, err = ReadFile(path); err != nil {
			return Config{}, err
		}
	}
	props = append(props, FromEnv(environ)...)
	c, errs := fromProperties(props)
	if err := errors.Join(append(errs, c.validate()...)...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// FromProperties makes a Config of props, in order (a later one wins).
// Unknown properties are errors, all reported; Validate is the caller's.
func FromProperties(props []Property) (Config, error) {
	c, errs := fromProperties(props)
	return c, errors.Join(errs...)
}

func fromProperties(props []Property) (Config, []error) {
	c := Config{Sources: map[string]Source{}}
	var errs []error
	for _, p := range props {
		if reason, ok := notSupported[p.Name]; ok {
			errs = append(errs, &PropertyError{Property: p.Name, Source: p.Source, Reason: "not supported: " + reason})
			continue
		}
		if slices.Contains(Ignored, p.Name) {
			c.Ignored = append(c.Ignored, p)
			c.Sources[p.Name] = p.Source
			continue
		}
		if v := strings.TrimSpace(p.Value); p.Name == "ssl.endpoint.identification.algorithm" && v != "" && !strings.EqualFold(v, "https") {
			errs = append(errs, &PropertyError{Property: p.Name, Source: p.Source,
				Reason: fmt.Sprintf("%q: want https (check the broker's host name) or empty (do not)", p.Value)})
			continue
		}
		if !c.set(p.Name, p.Value) {
			reason := "unknown property: Braid supports " + strings.Join(Supported(), ", ")
			errs = append(errs, &PropertyError{Property: p.Name, Source: p.Source, Reason: reason})
			continue
		}
		c.Sources[p.Name] = p.Source
	}
	return c, errs
}

// Supported lists the properties a Config has a field for.
func Supported() []string {
	return []string{"bootstrap.servers", "client.id", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
		"sasl.username", "sasl.password", "ssl.truststore.location", "ssl.truststore.type", "ssl.keystore.location",
		"ssl.keystore.type", "ssl.key.password", "ssl.endpoint.identification.algorithm"}
}

// set sets the field of property name, reporting whether there is one.
func (c *Config) set(name, value string) bool {
	switch name {
	case "bootstrap.servers":
		c.BootstrapServers = nil
		for s := range strings.SplitSeq(value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.BootstrapServers = append(c.BootstrapServers, s)
			}
		}
	case "client.id":
		c.ClientID = value
	case "security.protocol":
		c.SecurityProtocol = strings.ToUpper(strings.TrimSpace(value))
	case "sasl.mechanism":
		c.SASLMechanism = strings.ToUpper(strings.TrimSpace(value))
	case "sasl.jaas.config":
		c.SASLJAASConfig = value
	case "sasl.username":
		c.SASLUsername = value
	case "sasl.password":
		c.SASLPassword = value
	case "ssl.truststore.location":
		c.TruststoreLocation = value
	case "ssl.truststore.type":
		c.TruststoreType = strings.ToUpper(strings.TrimSpace(value))
	case "ssl.keystore.location":
		c.KeystoreLocation = value
	case "ssl.keystore.type":
		c.KeystoreType = strings.ToUpper(strings.TrimSpace(value))
	case "ssl.key.password":
		c.KeyPassword = value
	case "ssl.endpoint.identification.algorithm":
		// FromProperties has refused anything but https and "".
		c.SkipHostnameVerification = strings.TrimSpace(value) == ""
	default:
		return false
	}
	return true
}

// problem makes the PropertyError of name with its source.
func (c *Config) problem(name, format string, args ...any) error {
	return &PropertyError{Property: name, Source: c.Sources[name], Reason: fmt.Sprintf(format, args...)}
}

// TLS reports whether the protocol is SSL or SASL_SSL.
func (c *Config) TLS() bool { return c.SecurityProtocol == SSL || c.SecurityProtocol == SASLSSL }

// SASL reports whether the protocol is SASL_PLAINTEXT or SASL_SSL.
func (c *Config) SASL() bool {
	return c.SecurityProtocol == SASLPlaintext || c.SecurityProtocol == SASLSSL
}

// IsZero reports whether c sets nothing: a plaintext client with no
// options.
func (c *Config) IsZero() bool { return c.String() == Config{}.String() }

// Validate reports every problem of c at once (errors.Join of
// *PropertyError): values out of range, what the protocol needs and
// lacks, what it has but does not use, a JAAS line that does not parse.
// It reads no file; Opts does.
func (c *Config) Validate() error { return errors.Join(c.validate()...) }

func (c *Config) validate() []error {
	var errs []error
	add := func(name, format string, args ...any) { errs = append(errs, c.problem(name, format, args...)) }
	switch c.SecurityProtocol {
	case "", Plaintext, SSL, SASLPlaintext, SASLSSL:
	default:
		add("security.protocol", "%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", c.SecurityProtocol)
	}
	if c.SASL() {
		switch c.SASLMechanism {
		case Plain, ScramSHA256, ScramSHA512:
		case "":
			add("sasl.mechanism", "required with security.protocol %s: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's default, GSSAPI, is not supported)", c.SecurityProtocol)
		default:
			add("sasl.mechanism", "%q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.SASLMechanism)
		}
		switch {
		case c.SASLJAASConfig != "" && (c.SASLUsername != "" || c.SASLPassword != ""):
			add("sasl.jaas.config", "give either sasl.jaas.config or sasl.username and sasl.password, not both")
		case c.SASLJAASConfig != "":
			if _, err := c.jaas(); err != nil {
				errs = append(errs, err)
			}
		case c.SASLUsername == "" && c.SASLPassword == "":
			add("sasl.jaas.config", "security.protocol %s needs credentials: sasl.jaas.config, or sasl.username and sasl.password", c.SecurityProtocol)
		case c.SASLUsername == "":
			add("sasl.username", "missing: sasl.password is set without it")
		case c.SASLPassword == "":
			add("sasl.password", "missing: sasl.username is set without it")
		}
	} else {
		for _, name := range []string{"sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password"} {
			if _, ok := c.Sources[name]; ok || c.value(name) != "" {
				add(name, "set, but security.protocol %s uses no SASL: say SASL_PLAINTEXT or SASL_SSL", c.protocol())
			}
		}
	}
	for _, t := range []struct{ name, value string }{{"ssl.truststore.type", c.TruststoreType}, {"ssl.keystore.type", c.KeystoreType}} {
		switch t.value {
		case "", "PEM":
		case "JKS", "PKCS12":
			add(t.name, "%s stores are not supported: convert the store to PEM (keytool -importkeystore to PKCS12, then openssl pkcs12 -nodes) and set %s=PEM", t.value, t.name)
		default:
			add(t.name, "%q: only PEM is supported", t.value)
		}
	}
	if c.TLS() {
		if c.KeyPassword != "" && c.KeystoreLocation == "" {
			add("ssl.key.password", "set without ssl.keystore.location")
		}
	} else {
		for _, name := range []string{"ssl.truststore.location", "ssl.keystore.location", "ssl.key.password", "ssl.endpoint.identification.algorithm"} {
			if _, ok := c.Sources[name]; ok || c.value(name) != "" {
				add(name, "set, but security.protocol %s uses no TLS: say SSL or SASL_SSL", c.protocol())
			}
		}
	}
	return errs
}

// protocol is the security protocol, PLAINTEXT for "".
func (c *Config) protocol() string {
	if c.SecurityProtocol == "" {
		return Plaintext
	}
	return c.SecurityProtocol
}

// value is the value of a property with a string field, "" for others.
func (c *Config) value(name string) string {
	switch name {
	case "sasl.mechanism":
		return c.SASLMechanism
	case "sasl.jaas.config":
		return c.SASLJAASConfig
	case "sasl.username":
		return c.SASLUsername
	case "sasl.password":
		return c.SASLPassword
	case "ssl.truststore.location":
		return c.TruststoreLocation
	case "ssl.keystore.location":
		return c.KeystoreLocation
	case "ssl.key.password":
		return c.KeyPassword
	}
	return ""
}

// redacted stands for a secret's value.
const redacted = "[redacted]"

// properties are c's properties as name=value pairs, sorted, secrets
// redacted.
func (c Config) properties() [][2]string {
	var out [][2]string
	add := func(name, value string) {
		if value == "" {
			return
		}
		if slices.Contains(secret, name) {
			value = redacted
		}
		out = append(out, [2]string{name, value})
	}
	add("bootstrap.servers", strings.Join(c.BootstrapServers, ","))
	add("client.id", c.ClientID)
	add("security.protocol", c.SecurityProtocol)
	for _, name := range []string{"sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password",
		"ssl.truststore.location", "ssl.keystore.location", "ssl.key.password"} {
		add(name, c.value(name))
	}
	add("ssl.truststore.type", c.TruststoreType)
	add("ssl.keystore.type", c.KeystoreType)
	if c.SkipHostnameVerification {
		out = append(out, [2]string{"ssl.endpoint.identification.algorithm", ""})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// String prints the properties set, one name=value a line's worth
// separated by spaces, with the secrets' values redacted.
func (c Config) String() string {
	var parts []string
	for _, p := range c.properties() {
		parts = append(parts, p[0]+"="+p[1])
	}
	return strings.Join(parts, " ")
}

// GoString is String, so that %#v redacts too.
func (c Config) GoString() string { return "clientconfig.Config{" + c.String() + "}" }

// LogValue is a group of the properties set, secrets redacted.
func (c Config) LogValue() slog.Value {
	var attrs []slog.Attr
	for _, p := range c.properties() {
		attrs = append(attrs, slog.String(p[0], p[1]))
	}
	return slog.GroupValue(attrs...)
}

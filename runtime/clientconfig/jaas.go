package clientconfig

import (
	"fmt"
	"strings"
)

// The login modules of sasl.jaas.config.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// JAAS is a parsed sasl.jaas.config line.
type JAAS struct {
	// Module is the login module's class; Flag its control flag
	// (required, requisite, sufficient or optional).
	Module, Flag string
	// Options are the module's options (username, password, ...), in
	// the line's order.
	Options [][2]string
}

// Option returns the value of the option name and whether it was given.
func (j JAAS) Option(name string) (string, bool) {
	for _, o := range j.Options {
		if o[0] == name {
			return o[1], true
		}
	}
	return "", false
}

// ParseJAAS parses Kafka's JAAS line, as Kafka does: a login module's
// class, its flag, options name=value, and a closing ';'. A value is a
// bare word or a double-quoted string in which a backslash escapes the
// next character (\" and \\). Errors give positions, never values, which
// are secrets.
func ParseJAAS(line string) (JAAS, error) {
	p := &jaasParser{s: line}
	var j JAAS
	if j.Module = p.word(); j.Module == "" {
		return JAAS{}, p.fail("want a login module's class")
	}
	if j.Flag = p.word(); j.Flag == "" {
		return JAAS{}, p.fail("want the login module's flag (required) after %s", j.Module)
	}
	switch strings.ToLower(j.Flag) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return JAAS{}, fmt.Errorf("login module flag %q: want required, requisite, sufficient or optional", j.Flag)
	}
	for {
		p.space()
		if p.i == len(p.s) {
			return JAAS{}, p.fail("missing the closing ';'")
		}
		if p.s[p.i] == ';' {
			p.i++
			p.space()
			if p.i != len(p.s) {
				return JAAS{}, p.fail("more after the closing ';' (one login module only)")
			}
			return j, nil
		}
		name := p.word()
		if name == "" {
			return JAAS{}, p.fail("want an option name")
		}
		p.space()
		if p.i == len(p.s) || p.s[p.i] != '=' {
			return JAAS{}, p.fail("want '=' after option %s", name)
		}
		p.i++
		p.space()
		value, err := p.value()
		if err != nil {
			return JAAS{}, fmt.Errorf("option %s: %w", name, err)
		}
		j.Options = append(j.Options, [2]string{name, value})
	}
}

type jaasParser struct {
	s string
	i int
}

func (p *jaasParser) fail(format string, args ...any) error {
	return fmt.Errorf("at character %d: %s", p.i+1, fmt.Sprintf(format, args...))
}

func (p *jaasParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// word reads a bare word: up to white space, '=', ';' or a quote.
func (p *jaasParser) word() string {
	p.space()
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n=;\"", p.s[p.i]) < 0 {
		p.i++
	}
	return p.s[start:p.i]
}

// value reads a quoted string or a bare word.
func (p *jaasParser) value() (string, error) {
	if p.i == len(p.s) || p.s[p.i] != '"' {
		if w := p.word(); w != "" {
			return w, nil
		}
		return "", p.fail("want a value")
	}
	start := p.i
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\' && p.i+1 < len(p.s):
			b.WriteByte(p.s[p.i+1])
			p.i += 2
		case c == '"':
			p.i++
			return b.String(), nil
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	p.i = start
	return "", p.fail("the quoted value opened here is not closed")
}

// credentials returns the SASL user and password: the JAAS line's
// username and password, or sasl.username and sasl.password.
func (c *Config) credentials() (user, password string, err error) {
	if c.SASLJAASConfig == "" {
		return c.SASLUsername, c.SASLPassword, nil
	}
	j, err := c.jaas()
	if err != nil {
		return "", "", err
	}
	user, _ = j.Option("username")
	password, _ = j.Option("password")
	return user, password, nil
}

// jaas parses and checks sasl.jaas.config against sasl.mechanism.
func (c *Config) jaas() (JAAS, error) {
	const name = "sasl.jaas.config"
	j, err := ParseJAAS(c.SASLJAASConfig)
	if err != nil {
		return JAAS{}, c.problem(name, "parsing the JAAS line: %v", err)
	}
	want := ScramLoginModule
	if c.SASLMechanism == Plain {
		want = PlainLoginModule
	}
	var problems []string
	if j.Module != want && (c.SASLMechanism == Plain || strings.HasPrefix(c.SASLMechanism, "SCRAM-")) {
		problems = append(problems, fmt.Sprintf("login module %s does not go with sasl.mechanism %s: want %s", j.Module, c.SASLMechanism, want))
	}
	for _, o := range j.Options {
		if o[0] != "username" && o[0] != "password" {
			problems = append(problems, fmt.Sprintf("option %s is not supported (only username and password)", o[0]))
		}
	}
	for _, opt := range []string{"username", "password"} {
		if v, ok := j.Option(opt); !ok || v == "" {
			problems = append(problems, "option "+opt+" is missing or empty")
		}
	}
	if len(problems) > 0 {
		return JAAS{}, c.problem(name, "%s", strings.Join(problems, "; "))
	}
	return j, nil
}

package clientconfig

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EnvPrefix starts the environment variables that set a property: the
// property's name upper-cased, its dots as underscores
// (BRAID_KAFKA_SASL_MECHANISM sets sasl.mechanism).
const EnvPrefix = "BRAID_KAFKA_"

// FileEnv names the client configuration file when no --client-config
// flag does.
const FileEnv = "BRAID_CLIENT_CONFIG"

// Source is where a property was set: a file's line, or an environment
// variable.
type Source struct {
	// File and Line are the properties file and the line the property
	// starts on (1-based).
	File string
	Line int
	// Env is the environment variable, when the property came from one.
	Env string
}

// String is "file:line" or "environment variable NAME".
func (s Source) String() string {
	switch {
	case s.Env != "":
		return "environment variable " + s.Env
	case s.File != "":
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	return "the Config"
}

// Property is one property as read, with its source.
type Property struct {
	Name, Value string
	Source      Source
}

// EnvName is the environment variable that sets the property name.
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, ".", "_"))
}

// ReadFile reads a Java .properties file: key=value, key: value or
// "key value" lines, # and ! comments, a trailing backslash continuing a
// line, and Java's escapes (\t, \n, \uXXXX, \\ ...). Each Property's
// Source names the file and the line it starts on.
func ReadFile(path string) ([]Property, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading client config %s: %w", path, err)
	}
	return ParseProperties(path, string(data))
}

// ParseProperties parses the text of a .properties file named file in
// the Sources.
func ParseProperties(file, text string) ([]Property, error) {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	var props []Property
	for i := 0; i < len(lines); i++ {
		start := i
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// A logical line goes on while a line ends in an odd number of
		// backslashes; the next one's leading white space is dropped.
		for continues(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continues(line) {
			line = line[:len(line)-1]
		}
		key, value := splitProperty(line)
		src := Source{File: file, Line: start + 1}
		k, err := unescape(key)
		if err != nil {
			return nil, fmt.Errorf("reading client config %s: %w", src, err)
		}
		// The value's escapes are not reported with the value itself,
		// which may be a secret.
		v, err := unescape(value)
		if err != nil {
			return nil, &PropertyError{Property: k, Source: src, Reason: err.Error()}
		}
		props = append(props, Property{Name: k, Value: v, Source: src})
	}
	return props, nil
}

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at its key's end: the first
// unescaped '=', ':' or white space, then white space and one '=' or ':'.
func splitProperty(line string) (key, value string) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	key, rest := line[:end], line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

// unescape resolves Java's properties escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uXXXX escape at character %d`, i)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil {
				return "", fmt.Errorf(`malformed \uXXXX escape at character %d`, i)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// FromEnv returns the properties environ (os.Environ's form) sets with
// BRAID_KAFKA_ variables, each with its variable as Source.
func FromEnv(environ []string) []Property {
	var props []Property
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || name == EnvPrefix {
			continue
		}
		prop := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "_", "."))
		props = append(props, Property{Name: prop, Value: value, Source: Source{Env: name}})
	}
	return props
}

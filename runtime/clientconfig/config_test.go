package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []Property
	}{
		{"equals and colon", "a=1\nb: 2\nc 3\n", []Property{
			{"a", "1", Source{File: "f", Line: 1}}, {"b", "2", Source{File: "f", Line: 2}}, {"c", "3", Source{File: "f", Line: 3}}}},
		{"comments and blanks", "# x=1\n  ! y=2\n\n\t\nz = 3", []Property{{"z", "3", Source{File: "f", Line: 5}}}},
		{"white space around the separator", "  key   =   value with spaces", []Property{{"key", "value with spaces", Source{File: "f", Line: 1}}}},
		{"continuation", "sasl.jaas.config=org.Module \\\n    required \\\n    username=\"u\";\nnext=1", []Property{
			{"sasl.jaas.config", `org.Module required username="u";`, Source{File: "f", Line: 1}}, {"next", "1", Source{File: "f", Line: 4}}}},
		{"escaped backslash is no continuation", "a=x\\\\\nb=y", []Property{
			{"a", `x\`, Source{File: "f", Line: 1}}, {"b", "y", Source{File: "f", Line: 2}}}},
		{"escapes", `k\=ey=a\tb\u0041\:`, []Property{{"k=ey", "a\tbA:", Source{File: "f", Line: 1}}}},
		{"empty value", "ssl.endpoint.identification.algorithm=\nx", []Property{
			{"ssl.endpoint.identification.algorithm", "", Source{File: "f", Line: 1}}, {"x", "", Source{File: "f", Line: 2}}}},
		{"CRLF", "a=1\r\nb=2\r\n", []Property{{"a", "1", Source{File: "f", Line: 1}}, {"b", "2", Source{File: "f", Line: 2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProperties("f", tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		line, user, password, err string
	}{
		{line: `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p a\"ss";`, user: "alice", password: `p a"ss`},
		{line: `org.apache.kafka.common.security.plain.PlainLoginModule required username=bob password=secret ;`, user: "bob", password: "secret"},
		{line: "  M   required\n username = \"a b\"\tpassword=\"x\\\\y;z\";  ", user: "a b", password: `x\y;z`},
		{line: `M required username="alice" password="open`, err: "option password: at character 38: the quoted value opened here is not closed"},
		{line: `M required username="alice"`, err: "missing the closing ';'"},
		{line: `M maybe username="alice";`, err: `login module flag "maybe"`},
		{line: `M required username "alice";`, err: "want '=' after option username"},
		{line: `M required a=1; N required b=2;`, err: "one login module only"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			j, err := ParseJAAS(tc.line)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u, _ := j.Option("username")
			p, _ := j.Option("password")
			if u != tc.user || p != tc.password {
				t.Errorf("user %q password %q, want %q %q", u, p, tc.user, tc.password)
			}
		})
	}
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadEnvOverridesFile: a BRAID_KAFKA_ variable wins over the file,
// and Sources says which set each property.
func TestLoadEnvOverridesFile(t *testing.T) {
	path := writeFile(t, "client.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=alice\nsasl.password=from-file\n")
	c, err := Load(path, []string{"BRAID_KAFKA_SASL_MECHANISM=SCRAM-SHA-512", "BRAID_KAFKA_SASL_PASSWORD=from-env", "OTHER=1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.SASLMechanism != ScramSHA512 || c.SASLPassword != "from-env" || c.SASLUsername != "alice" {
		t.Errorf("got %s, want SCRAM-SHA-512 from the environment", c)
	}
	if got := c.Sources["sasl.mechanism"].String(); got != "environment variable BRAID_KAFKA_SASL_MECHANISM" {
		t.Errorf("sasl.mechanism's source %q", got)
	}
	if got := c.Sources["sasl.username"].String(); got != path+":3" {
		t.Errorf("sasl.username's source %q, want %s:3", got, path)
	}
	if EnvName("ssl.truststore.location") != "BRAID_KAFKA_SSL_TRUSTSTORE_LOCATION" {
		t.Error(EnvName("ssl.truststore.location"))
	}
}

// TestLoadUnknownProperty: an unknown property is an error naming it
// and its file:line or variable; the allowed Java properties are kept
// in Ignored.
func TestLoadUnknownProperty(t *testing.T) {
	path := writeFile(t, "c.properties", "request.timeout.ms=30000\n\nsecurity.protocl=SSL\n")
	_, err := Load(path, []string{"BRAID_KAFKA_LINGER_MS=5"})
	var pe *PropertyError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v, want a *PropertyError", err)
	}
	for _, want := range []string{"security.protocl (" + path + ":3): unknown property", "linger.ms (environment variable BRAID_KAFKA_LINGER_MS): unknown property"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	c, err := Load(path[:0], []string{"BRAID_KAFKA_REQUEST_TIMEOUT_MS=1"})
	if err != nil || len(c.Ignored) != 1 || c.Ignored[0].Name != "request.timeout.ms" {
		t.Errorf("Load = %v, %v: want request.timeout.ms ignored", c.Ignored, err)
	}
	_, err = Load("", []string{"BRAID_KAFKA_SSL_TRUSTSTORE_TYPE=JKS", "BRAID_KAFKA_SECURITY_PROTOCOL=SSL"})
	if err == nil || !strings.Contains(err.Error(), "convert the store to PEM") {
		t.Errorf("a JKS truststore: %v, want an error saying to convert it", err)
	}
}

// TestValidateReportsEveryProblem: Validate reports all problems, each
// a *PropertyError naming the property and its source.
func TestValidateReportsEveryProblem(t *testing.T) {
	path := writeFile(t, "c.properties", strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=GSSAPI",
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="hunter2";`,
		"sasl.username=u",
		"ssl.keystore.type=PKCS12",
		"ssl.key.password=keysecret",
	}, "\n"))
	_, err := Load(path, nil)
	if err == nil {
		t.Fatal("no error")
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("error %T, want joined errors", err)
	}
	want := map[string]int{"sasl.mechanism": 2, "sasl.jaas.config": 3, "ssl.keystore.type": 5, "ssl.key.password": 6}
	got := map[string]int{}
	for _, e := range joined.Unwrap() {
		var pe *PropertyError
		if !errors.As(e, &pe) {
			t.Errorf("%v is not a *PropertyError", e)
			continue
		}
		got[pe.Property] = pe.Source.Line
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems at %v, want %v\n%v", got, want, err)
	}
	for _, s := range []string{"hunter2", "keysecret"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error shows the secret %q: %v", s, err)
		}
	}
}

// TestSecretsRedacted: no secret appears in String, %v, %+v, %#v, a log
// line or an error, however the value is wrong.
func TestSecretsRedacted(t *testing.T) {
	const pw, keyPW = `p4ss"w0rd`, "k3y-pass"
	jaas := fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="%s`, strings.ReplaceAll(pw, `"`, `\"`))
	configs := []Config{
		{SecurityProtocol: SASLSSL, SASLMechanism: ScramSHA256, SASLJAASConfig: jaas + `";`, KeyPassword: keyPW, KeystoreLocation: "/nonexistent.pem"},
		{SecurityProtocol: SASLSSL, SASLMechanism: ScramSHA256, SASLJAASConfig: jaas}, // unclosed quote
		{SecurityProtocol: SASLPlaintext, SASLMechanism: Plain, SASLPassword: pw},
		{SecurityProtocol: Plaintext, SASLPassword: pw, KeyPassword: keyPW},
	}
	for i, c := range configs {
		var out bytes.Buffer
		slog.New(slog.NewTextHandler(&out, nil)).Info("config", "client", c)
		slog.New(slog.NewJSONHandler(&out, nil)).Info("config", "client", c)
		fmt.Fprintf(&out, "%s %v %+v %#v %v", c, c, c, c, &c)
		if err := c.Validate(); err != nil {
			out.WriteString(err.Error())
		}
		if _, err := c.Opts(); err != nil {
			out.WriteString(err.Error())
		}
		if _, err := (&c).TLSConfig(); err != nil {
			out.WriteString(err.Error())
		}
		for _, s := range []string{"p4ss", "w0rd", keyPW} {
			if strings.Contains(out.String(), s) {
				t.Errorf("config %d: %q shows in\n%s", i, s, out.String())
			}
		}
		if !strings.Contains(out.String(), redacted) {
			t.Errorf("config %d: nothing redacted in\n%s", i, out.String())
		}
	}
	// A bad escape in a secret's value names the property, not the value.
	_, err := ParseProperties("f", `sasl.password=ab\uZZZZcd`)
	if err == nil || strings.Contains(err.Error(), "ab") || !strings.Contains(err.Error(), "sasl.password (f:1)") {
		t.Errorf("bad escape: %v", err)
	}
}

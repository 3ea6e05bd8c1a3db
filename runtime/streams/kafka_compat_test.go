package streams_test

// The Kafka Streams port: cases translated from Kafka Streams' own
// TopologyTestDriver tests (apache/kafka, streams/src/test/java). Each case
// names the Java test it comes from, builds the same topology with Braid's
// DSL, pipes the same records at the same timestamps and asserts the
// outputs that Java test asserts, in the same order. The Go is written from
// the asserted values, not from Kafka's code.
//
// The cases live in kafka_compat_<area>_test.go files, one per area, each
// registering its cases with port; describe() texts are golden files in
// testdata/kafka/describe. Where Braid keeps a documented difference from
// Kafka (README, "Where Braid differs from Kafka Streams"), the case asserts
// Braid's output and its Differs field says which difference it is.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/braidstream/braid/runtime/streams"
)

// kafkaCase is one ported Kafka Streams test.
type kafkaCase struct {
	// Kafka is the Java test, "Class.method" (a suffix after a slash
	// tells apart several cases ported from one method).
	Kafka string
	// Area groups the cases for the coverage check: one of kafkaAreas.
	Area string
	// Differs, when set, names the README difference the case asserts
	// instead of Kafka's output: the item "**<Differs>.**" of the
	// README's section "Where Braid differs from Kafka Streams".
	Differs string
	Run     func(t *testing.T)
}

// kafkaAreas are the areas the port must cover, each with at least one
// case.
var kafkaAreas = []string{
	"tumbling", "hopping", "sliding", "session", "grace", "emit-final",
	"stream-stream-join", "stream-table-join", "table-table-join",
	"table-aggregation", "stream-aggregation", "table", "describe",
}

// kafkaPort holds every registered case.
var kafkaPort []kafkaCase

// port registers cases; area files call it from a package-level var.
func port(cases ...kafkaCase) []kafkaCase {
	kafkaPort = append(kafkaPort, cases...)
	return cases
}

func TestKafkaCompat(t *testing.T) {
	cases := slices.Clone(kafkaPort)
	slices.SortFunc(cases, func(a, b kafkaCase) int { return strings.Compare(a.Kafka, b.Kafka) })
	for _, c := range cases {
		t.Run(c.Kafka, c.Run)
	}
}

// TestKafkaCompatCoverage keeps the port at the size and breadth the
// project promises: at least 60 distinct cases, every area covered, every
// case named after a Java test.
func TestKafkaCompatCoverage(t *testing.T) {
	seen := make(map[string]bool)
	perArea := make(map[string]int)
	for _, c := range kafkaPort {
		class, method, ok := strings.Cut(c.Kafka, ".")
		if !ok || !strings.HasSuffix(class, "Test") || method == "" {
			t.Errorf("case %q: Kafka must be \"<Java test class>.<method>\"", c.Kafka)
		}
		if seen[c.Kafka] {
			t.Errorf("case %q registered twice", c.Kafka)
		}
		seen[c.Kafka] = true
		if !slices.Contains(kafkaAreas, c.Area) {
			t.Errorf("case %q: area %q is not one of %v", c.Kafka, c.Area, kafkaAreas)
		}
		perArea[c.Area]++
	}
	if len(seen) < 60 {
		t.Errorf("the port has %d cases, want at least 60", len(seen))
	}
	for _, a := range kafkaAreas {
		if perArea[a] == 0 {
			t.Errorf("no case covers %s", a)
		}
	}
}

// TestKafkaCompatDifferencesDocumented keeps the documentation true: every
// difference a case asserts is a section "## <name>" of
// docs/differences.md, and the README's list of differences links every
// section of it, so that each is one click from the README.
func TestKafkaCompatDifferencesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/differences.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := make(map[string]bool)
	for _, line := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			sections[name] = true
			link := "](docs/differences.md#" + markdownAnchor(name) + ")"
			if !strings.Contains(string(readme), link) {
				t.Errorf("README.md does not link the difference %q (want a link ending %q)", name, link)
			}
		}
	}
	for _, c := range kafkaPort {
		if c.Differs != "" && !sections[c.Differs] {
			t.Errorf("case %s asserts the difference %q, which docs/differences.md has no section \"## %s\" for", c.Kafka, c.Differs, c.Differs)
		}
	}
}

// markdownAnchor is the fragment GitHub gives a heading: lower case,
// spaces to hyphens, punctuation other than hyphens dropped.
func markdownAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// kafkaDriver is a TestDriver used the way Kafka's tests use
// TopologyTestDriver: records are piped as strings (or []byte, or nil for
// null) and outputs read back as "key:value@ts" lines.
type kafkaDriver struct {
	t *testing.T
	d *streams.TestDriver
	// taps are the records TestDriver's Tap saw, as "node key:value@ts"
	// lines (with "<-old" after the value for table changes that carry
	// one), for cases that assert what an operator forwarded, as Kafka's
	// MockApiProcessorSupplier does.
	taps []string
}

// newKafkaDriver builds b and starts a TestDriver on it; the driver is
// closed when the test ends.
func newKafkaDriver(t *testing.T, b *streams.Builder, cfg streams.DriverConfig) *kafkaDriver {
	t.Helper()
	topo, err := b.Build()
	if err != nil {
		t.Fatalf("building topology: %v", err)
	}
	k := &kafkaDriver{t: t}
	tap := cfg.Tap
	cfg.Tap = func(r streams.TapRecord) {
		line := r.Node + " " + kafkaKV(r.Key, r.Value, r.Timestamp)
		if r.Old != nil {
			line = fmt.Sprintf("%s<-%s", line, kafkaString(r.Old))
		}
		k.taps = append(k.taps, line)
		if tap != nil {
			tap(r)
		}
	}
	if k.d, err = streams.NewTestDriver(topo, cfg); err != nil {
		t.Fatalf("starting test driver: %v", err)
	}
	t.Cleanup(func() {
		if err := k.d.Close(); err != nil {
			t.Errorf("closing test driver: %v", err)
		}
	})
	return k
}

// pipe writes one record; key and value are a string, []byte or nil.
func (k *kafkaDriver) pipe(topic string, key, value any, ts int64) {
	k.t.Helper()
	if err := k.d.Pipe(topic, kafkaBytes(key), kafkaBytes(value), ts); err != nil {
		k.t.Fatalf("piping %v:%v@%d to %s: %v", key, value, ts, topic, err)
	}
}

// commit commits, as a TopologyTestDriver does after every piped record
// when caching is on (Kafka's tests usually turn caching off instead).
func (k *kafkaDriver) commit() {
	k.t.Helper()
	if err := k.d.Commit(); err != nil {
		k.t.Fatalf("committing: %v", err)
	}
}

// read returns the records written to topic since the last read, decoded
// with the given serdes, as "key:value@ts" lines.
func (k *kafkaDriver) read(topic string, keySerde, valueSerde streams.Serde) []string {
	k.t.Helper()
	var out []string
	for _, r := range k.d.ReadOutput(topic) {
		key, err := keySerde.Deserialize(topic, r.Key)
		if err != nil {
			k.t.Fatalf("decoding key of %s offset %d: %v", topic, r.Offset, err)
		}
		value, err := valueSerde.Deserialize(topic, r.Value)
		if err != nil {
			k.t.Fatalf("decoding value of %s offset %d: %v", topic, r.Offset, err)
		}
		out = append(out, kafkaKV(key, value, r.Timestamp))
	}
	return out
}

// expect reads topic as read does and compares it with want.
func (k *kafkaDriver) expect(topic string, keySerde, valueSerde streams.Serde, want ...string) {
	k.t.Helper()
	got := k.read(topic, keySerde, valueSerde)
	if !slices.Equal(got, want) {
		k.t.Errorf("%s:\n got  %s\n want %s", topic, kafkaLines(got), kafkaLines(want))
	}
}

// expectTaps compares the taps of node since the last expectTaps with
// want (lines without the node name), and forgets every tap seen so far.
func (k *kafkaDriver) expectTaps(node string, want ...string) {
	k.t.Helper()
	var got []string
	for _, line := range k.taps {
		if name, rest, _ := strings.Cut(line, " "); name == node {
			got = append(got, rest)
		}
	}
	k.taps = nil
	if !slices.Equal(got, want) {
		k.t.Errorf("forwarded by %s:\n got  %s\n want %s", node, kafkaLines(got), kafkaLines(want))
	}
}

// kafkaKV formats a record as "key:value@ts"; a windowed key prints as
// Kafka's Windowed.toString does, "[key@start/end]", and null as "null".
func kafkaKV(key, value any, ts int64) string {
	return fmt.Sprintf("%s:%s@%d", kafkaString(key), kafkaString(value), ts)
}

func kafkaString(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case []byte:
		if v == nil {
			return "null"
		}
		return string(v)
	case streams.Windowed:
		return fmt.Sprintf("[%s@%d/%d]", kafkaString(v.Key), v.Start, v.End)
	}
	return fmt.Sprint(v)
}

func kafkaBytes(v any) []byte {
	switch v := v.(type) {
	case nil:
		return nil
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	panic(fmt.Sprintf("kafkaDriver: pipe a string, []byte or nil, not %T", v))
}

func kafkaLines(lines []string) string {
	if len(lines) == 0 {
		return "(nothing)"
	}
	return "[" + strings.Join(lines, " ") + "]"
}

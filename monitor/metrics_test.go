package monitor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// promSample is one parsed sample line.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseProm parses the text exposition format 0.0.4 strictly enough for
// the test: every line is a HELP or TYPE comment or a sample
// `name{label="value",...} value`; every sample's name has a HELP and a
// TYPE line before it, and each name's samples come together.
func parseProm(text string) (map[string]string, []promSample, error) {
	types, helps := map[string]string{}, map[string]bool{}
	var samples []promSample
	done := map[string]bool{} // names whose block has ended
	current := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			kind, rest, _ := strings.Cut(rest, " ")
			name, arg, _ := strings.Cut(rest, " ")
			switch kind {
			case "HELP":
				helps[name] = true
			case "TYPE":
				if arg != "counter" && arg != "gauge" && arg != "summary" && arg != "histogram" && arg != "untyped" {
					return nil, nil, fmt.Errorf("line %d: type %q", n, arg)
				}
				types[name] = arg
			default:
				return nil, nil, fmt.Errorf("line %d: comment %q", n, line)
			}
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
		if !helps[s.name] || types[s.name] == "" {
			return nil, nil, fmt.Errorf("line %d: %s has no HELP or TYPE before it", n, s.name)
		}
		if s.name != current {
			if done[s.name] {
				return nil, nil, fmt.Errorf("line %d: the samples of %s are not together", n, s.name)
			}
			done[current], current = true, s.name
		}
		samples = append(samples, s)
	}
	return types, samples, sc.Err()
}

func parseSample(line string) (promSample, error) {
	s := promSample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, errors.New("no name")
	}
	s.name = line[:i]
	for _, c := range s.name {
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return s, fmt.Errorf("bad name %q", s.name)
		}
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for rest != "" && rest[0] != '}' {
			eq := strings.Index(rest, `="`)
			if eq <= 0 {
				return s, errors.New("bad label")
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var val strings.Builder
			for {
				if rest == "" {
					return s, errors.New("unterminated label value")
				}
				c := rest[0]
				rest = rest[1:]
				if c == '"' {
					break
				}
				if c == '\n' {
					return s, errors.New("raw newline in a label value")
				}
				if c == '\\' {
					if rest == "" {
						return s, errors.New("dangling escape")
					}
					switch rest[0] {
					case '\\':
						val.WriteByte('\\')
					case '"':
						val.WriteByte('"')
					case 'n':
						val.WriteByte('\n')
					default:
						return s, fmt.Errorf("bad escape \\%c", rest[0])
					}
					rest = rest[1:]
					continue
				}
				val.WriteByte(c)
			}
			if _, dup := s.labels[key]; dup {
				return s, fmt.Errorf("label %s twice", key)
			}
			s.labels[key] = val.String()
			rest = strings.TrimPrefix(rest, ",")
		}
		if rest == "" {
			return s, errors.New("unterminated labels")
		}
		rest = rest[1:]
	}
	value, ok := strings.CutPrefix(rest, " ")
	if !ok || strings.Contains(value, " ") {
		return s, errors.New("want one space, then the value")
	}
	v, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// TestWriteMetrics feeds a deployment with an awkward id hooks and a
// sample, and checks that the exposition parses and holds the expected
// series, with the label values escaped.
func TestWriteMetrics(t *testing.T) {
	m := New(Options{})
	const dep = "dep \"one\"\\two\nthree"
	src := &fakeSource{}
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: dep}, src))
	a, s := streams.TaskID{Partition: 0}, streams.TaskID{Partition: 1}
	src.set([]streams.InstanceInfo{
		{ID: "instance-1", State: streams.InstanceRunning, Since: time.Now(), Stats: streams.Stats{State: streams.Running,
			Tasks: []streams.TaskStats{{ID: a, StreamTime: t0 + 5000, Processed: 42, Restoring: true,
				Partitions: []streams.PartitionStats{
					{TopicPartition: streams.TopicPartition{Topic: "in", Partition: 0}, Position: 40, EndOffset: 47, Lag: 7},
					{TopicPartition: streams.TopicPartition{Topic: "in2", Partition: 0}, Position: -1, EndOffset: -1, Lag: -1},
				}}},
			Standbys: []streams.StandbyStats{{ID: s, Stores: []streams.StandbyStoreStats{
				{Name: "per-window", Lag: 12, TimeLag: 1500 * time.Millisecond}}}}}},
		{ID: "instance-2", State: streams.InstanceCrashed, Since: time.Now()},
	})
	h.OnCommit(streams.CommitEvent{InstanceID: "instance-1", Took: 2500 * time.Microsecond})
	h.OnRestoreStart(streams.RestoreEvent{InstanceID: "instance-1", Task: a, Store: "per-window", StartOffset: 100, EndOffset: 1100})
	h.OnRestoreProgress(streams.RestoreEvent{InstanceID: "instance-1", Task: a, Store: "per-window", StartOffset: 100, EndOffset: 1100,
		Restored: 400, Rate: 200})
	for range 3 {
		h.OnLateRecordDropped(streams.LateRecordEvent{InstanceID: "instance-1", Task: a, Store: "per-window",
			Timestamp: t0 + 1000, StreamTime: t0 + 5000})
	}
	h.OnTaskFailedOver(streams.FailoverEvent{Task: s, From: "instance-2", To: "instance-1", Cause: "crash",
		Downtime: 3200 * time.Millisecond, ResumedAt: time.Now()})
	m.publish()

	var buf bytes.Buffer
	if err := m.WriteMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	types, samples, err := parseProm(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	wantTypes := map[string]string{
		"braid_records_processed_total": "counter", "braid_records_dropped_late_total": "counter",
		"braid_record_lateness_ms": "gauge", "braid_stream_time_ms": "gauge", "braid_consumer_lag_records": "gauge",
		"braid_restore_remaining_records": "gauge", "braid_standby_lag_records": "gauge", "braid_standby_lag_ms": "gauge",
		"braid_commit_latency_ms": "gauge", "braid_failovers_total": "counter", "braid_failover_downtime_ms": "gauge",
	}
	for name, typ := range wantTypes {
		if types[name] != typ {
			t.Errorf("%s has type %q, want %q", name, types[name], typ)
		}
	}
	type series struct {
		name  string
		kv    []string
		value float64
	}
	for _, want := range []series{
		{"braid_records_processed_total", []string{"instance", "instance-1", "task", "0_0"}, 42},
		{"braid_stream_time_ms", []string{"instance", "instance-1", "task", "0_0"}, float64(t0 + 5000)},
		{"braid_consumer_lag_records", []string{"instance", "instance-1", "task", "0_0"}, 7},
		{"braid_restore_remaining_records", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 600},
		{"braid_records_dropped_late_total", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 3},
		{"braid_record_lateness_ms", []string{"instance", "instance-1", "task", "0_0", "store", "per-window"}, 4000},
		{"braid_standby_lag_records", []string{"instance", "instance-1", "task", "0_1", "store", "per-window"}, 12},
		{"braid_standby_lag_ms", []string{"instance", "instance-1", "task", "0_1", "store", "per-window"}, 1500},
		{"braid_commit_latency_ms", []string{"instance", "instance-1"}, 2.5},
		{"braid_failovers_total", []string{"instance", "instance-2", "task", "0_1"}, 1},
		{"braid_failover_downtime_ms", []string{"task", "0_1"}, 3200},
	} {
		found := false
		for _, s := range samples {
			if s.name != want.name || s.labels["deployment"] != dep || len(s.labels) != 1+len(want.kv)/2 {
				continue
			}
			match := true
			for i := 0; i < len(want.kv); i += 2 {
				match = match && s.labels[want.kv[i]] == want.kv[i+1]
			}
			if match {
				found = true
				if s.value != want.value {
					t.Errorf("%s%v = %v, want %v", want.name, want.kv, s.value, want.value)
				}
			}
		}
		if !found {
			t.Errorf("no series %s%v of deployment %q in\n%s", want.name, want.kv, dep, buf.String())
		}
	}
	for _, s := range samples {
		if s.labels["instance"] == "instance-2" && s.name != "braid_failovers_total" {
			t.Errorf("the crashed instance has a series %s %v", s.name, s.labels)
		}
	}
}

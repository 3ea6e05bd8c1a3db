package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCompileCommand(t *testing.T) {
	var out bytes.Buffer
	err := runCompile(context.Background(), []string{"../../designer/testdata/orders-windowed.json", "--app-id", "shop"}, &out)
	if err != nil {
		t.Fatalf("runCompile: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"Topologies:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n",
		"    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [big-orders-per-10s])\n",
		"    Sink: KSTREAM-SINK-0000000008 (topic: big-orders-per-10s)\n",
		"Internal topics (application id shop):\n",
		"  shop-big-orders-per-10s-repartition  repartition  as orders",
		"  delete ",
		"  shop-big-orders-per-10s-changelog    changelog    as shop-big-orders-per-10s-repartition  compact,delete",
		"big-orders-per-10s\n",
		"Stores:\n  NAME ",
		"  big-orders-per-10s  window  KSTREAM-AGGREGATE-0000000003  1             yes     yes     15s        5s     on-window-close\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}

}

// TestCompilePrintsTheTopicsRunUses: braid compile, without --app-id,
// prints the internal topics braid run of the same design creates.
func TestCompilePrintsTheTopicsRunUses(t *testing.T) {
	var out bytes.Buffer
	if err := runCompile(context.Background(), []string{"orders-demo.json"}, &out); err != nil {
		t.Fatalf("runCompile: %v\n%s", err, out.String())
	}
	demo := readDemoTopics(t)
	addr, cl, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 2)
	produceOrders(t, cl, demo.source)
	p := startProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", "i1", "--state-dir", t.TempDir(), "--commit-interval", "200ms")
	waitForCount(t, addr, demo.sink, 5)
	p.terminate(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var internal []string
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, demo.appID+"-") {
			internal = append(internal, name)
		}
	}
	if len(internal) < 2 {
		t.Fatalf("braid run created internal topics %q, want a repartition and a changelog topic", internal)
	}
	for _, name := range internal {
		if !strings.Contains(out.String(), "  "+name+" ") {
			t.Errorf("braid run created %q, which braid compile does not print:\n%s", name, out.String())
		}
	}
}

func TestCompileCommandStateless(t *testing.T) {
	var out bytes.Buffer
	if err := runCompile(context.Background(), []string{"../../designer/testdata/payments-branches.json"}, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "Internal topics (application id braid-payments-branches): none\n") || !strings.Contains(got, "Stores: none\n") {
		t.Errorf("output:\n%s", got)
	}
}

func TestCompileCommandProblems(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.json")
	design := `{"id": "bad", "name": "bad", "version": 1,
	  "nodes": [
	    {"id": "src", "kind": "source-stream", "params": {"topic": "in"}},
	    {"id": "f", "kind": "filter", "params": {"predicate": "valu.amount > 1"}},
	    {"id": "out", "kind": "sink", "params": {}}
	  ],
	  "edges": [
	    {"from": "src", "fromPort": "out", "to": "f", "toPort": "in"},
	    {"from": "f", "fromPort": "out", "to": "out", "toPort": "in"}
	  ]}`
	if err := os.WriteFile(path, []byte(design), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runCompile(context.Background(), []string{path}, &out)
	if err == nil || !strings.Contains(err.Error(), "2 problems") {
		t.Errorf("runCompile = %v, want an error saying 2 problems", err)
	}
	want := "node f (filter) predicate: unknown name valu (1:1)\nnode out (sink) topic: required\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestCompileCommandBadInvocations(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want one design file, got 0"},
		{[]string{"a.json", "b.json"}, "want one design file, got 2"},
		{[]string{"does-not-exist.json"}, "no such file"},
		{[]string{"compile.go"}, "design JSON"},
	} {
		err := runCompile(context.Background(), tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runCompile(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	var out bytes.Buffer
	if err := runCompile(context.Background(), []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Usage: braid compile") {
		t.Errorf("--help: %v\n%s", err, out.String())
	}
}

package main

import (
	"context"
	"flag"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/runtime/storeserver"
	"github.com/braidstream/braid/runtime/streams"
)

// freeAddr returns a 127.0.0.1 address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeQueriesRunProcesses: two `braid run --advertise` processes of
// orders-demo.json, with a standby each, and `braid serve` watching them:
// the store browser's API answers a key through their store servers,
// from its owner; once the owner's process is killed (SIGKILL), the same
// lookup answers from the surviving instance: its standby's copy, marked
// stale, until the group moves the task to it, then its active. The token is the processes' and
// the server's, from the environment and the flag alike.
func TestServeQueriesRunProcesses(t *testing.T) {
	const token = "q-token"
	demo := readDemoTopics(t)
	addr, cl, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 4)
	serve := startProcess(t, "serve", "--listen", "127.0.0.1:0", "--brokers", addr, "--no-demo",
		"--data-dir", t.TempDir(), "--query-token", token)
	runs, servers := map[string]*process{}, map[string]string{}
	for _, id := range []string{"i1", "i2"} {
		server := freeAddr(t)
		servers[id] = server
		runs[id] = launchProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", id,
			"--state-dir", filepath.Join(t.TempDir(), id), "--session-timeout", "5s", "--standbys", "1",
			"--advertise", server, "--query-token", token)
		runs[id].waitLine(t, func(line string) bool { return strings.Contains(line, "serving store lookups on http://"+server) })
	}
	produceOrders(t, cl, demo.source)

	var info deploy.Info
	waitUntil(t, 2*time.Minute, "the server to describe "+demo.appID, func() bool {
		return serve.call(t, "GET", "/api/deployments/"+demo.appID, "", &info) == 200 && len(info.Stores) > 0
	})
	store := info.Stores[0].Name
	path := "/api/deployments/" + demo.appID + "/query?" + url.Values{"store": {store}, "key": {"c1"}}.Encode()
	var res deploy.QueryResult
	waitUntil(t, 2*time.Minute, "c1's windows in "+store+" through the store servers", func() bool {
		res = deploy.QueryResult{}
		return serve.call(t, "GET", path, "", &res) == 200 && res.Found && len(res.Windows) > 0 && !res.Stale
	})
	owner := res.Instance
	survivor := map[string]string{"i1": "i2", "i2": "i1"}[owner]
	if survivor == "" {
		t.Fatalf("c1 answered by %q, want i1 or i2: %+v", owner, res)
	}
	windows := len(res.Windows)
	// The survivor's standby of c1's task has caught up, as the server's
	// metrics say.
	loc, err := (&storeserver.Client{Token: token}).Metadata(context.Background(), servers[survivor], store, "c1")
	if err != nil || loc.Active.Instance != owner || len(loc.Standbys) != 1 || loc.Standbys[0].Instance != survivor {
		t.Fatalf("metadata of c1 from %s: %+v, %v; want %s active, %s standby", survivor, loc, err, owner, survivor)
	}
	waitUntil(t, 2*time.Minute, "the standby of "+loc.Task+" on "+survivor+" caught up", func() bool {
		for _, s := range scrape(t, serve.url) {
			if s.name == "braid_standby_lag_records" && strings.Contains(s.labels, `instance="`+survivor+`"`) &&
				strings.Contains(s.labels, `task="`+loc.Task+`"`) && strings.Contains(s.labels, `store="`+store+`"`) {
				return s.value == 0
			}
		}
		return false
	})

	if err := runs[owner].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var stale, fresh time.Duration
	waitUntil(t, 2*time.Minute, "c1 answered by the surviving instance as active", func() bool {
		res = deploy.QueryResult{}
		if serve.call(t, "GET", path, "", &res) != 200 || !res.Found || res.Instance != survivor || len(res.Windows) < windows {
			return false
		}
		if res.Stale && stale == 0 {
			stale = time.Since(killed)
		}
		fresh = time.Since(killed)
		return !res.Stale
	})
	if stale == 0 {
		t.Errorf("no stale answer from %s's standby before its active answered, %v after the kill", survivor, fresh)
	}
	t.Logf("after killing %s: %s's standby answered (stale) %v after the kill, its active %v after (session timeout 5s)",
		owner, survivor, stale.Round(time.Millisecond), fresh.Round(time.Millisecond))
	runs[survivor].terminate(t)
}

// TestRunAdvertiseBadInput: an advertised address off loopback needs a
// token, and must be host:port.
func TestRunAdvertiseBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--advertise", "10.1.2.3:7070"}, []string{"--query-token", "10.1.2.3:7070", "not a loopback address"}},
		{[]string{"--advertise", "localhost"}, []string{"ApplicationServer", `"localhost" is not host:port`}},
	} {
		err := run(context.Background(), append([]string{"run", "orders-demo.json"}, tc.args...), io.Discard, io.Discard)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("braid run %q: %v; want it to say %s", tc.args, err, w)
			}
		}
	}
	t.Setenv("BRAID_QUERY_TOKEN", "from-env")
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	flags := streams.DefineRunnerFlags(fs, "", "")
	if err := fs.Parse([]string{"--advertise", "10.1.2.3:7070"}); err != nil {
		t.Fatal(err)
	}
	if rc, err := flags.Config(); err != nil || rc.QueryToken != "from-env" || rc.Config.ApplicationServer != "10.1.2.3:7070" {
		t.Errorf("flags with $BRAID_QUERY_TOKEN: %+v, %v; want the token from the environment", rc, err)
	}
}

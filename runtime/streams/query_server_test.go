package streams_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/storeserver"
	"github.com/braidstream/braid/runtime/streams"
)

// queryProcess is one Runner standing in for a process of an application,
// serving its stores on a port of 127.0.0.1.
type queryProcess struct {
	id, addr string
	runner   *streams.Runner
	done     chan error
}

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

// clickCounts is the topology of the query tests: clicks counted per
// user into "per-user", and per user and hour into the window store
// "hourly", one sub-topology, so that two instances each run half its
// tasks. The producer partitioned the clicks with its own
// (franz-go's default) partitioner, which QueryMetadata must agree with.
func clickCounts(t *testing.T) *streams.Topology {
	t.Helper()
	builder := streams.NewBuilder()
	grouped := builder.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey(streams.WithSerdes(streams.String, streams.String))
	grouped.Count(streams.Materialized(streams.StoreOptions{Name: "per-user"}))
	grouped.WindowedBy(streams.Tumbling(time.Hour, 0)).Count(streams.Materialized(streams.StoreOptions{Name: "hourly"}))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func startQueryProcess(t *testing.T, b *brokertest.Cluster, topo *streams.Topology, id, token string) *queryProcess {
	t.Helper()
	cfg := testConfig(b, "routed-queries")
	cfg.StateDir = t.TempDir()
	cfg.StandbyReplicas = 1
	p := &queryProcess{id: id, addr: freeAddr(t), done: make(chan error, 1)}
	cfg.ApplicationServer = p.addr
	r, err := streams.NewRunner(topo, streams.RunnerConfig{Config: cfg, InstanceID: id, QueryToken: token})
	if err != nil {
		t.Fatal(err)
	}
	p.runner = r
	ctx, cancel := context.WithCancel(context.Background())
	go func() { p.done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-p.done // a crashed instance fails its Runner: that is the test's doing
	})
	return p
}

// hostOf returns the process whose instance id is id.
func hostOf(procs []*queryProcess, id string) *queryProcess {
	for _, p := range procs {
		if p.id == id {
			return p
		}
	}
	return nil
}

// TestStoreServerRoutesLookups runs two processes of one application, each
// serving its stores, with a standby of every task on the other: a
// lookup asked of either is answered by the key's active wherever it is,
// QueryMetadata names the instance whose stats show the task, a range
// scan gathers both processes' rows, requests need the token, and with
// the active crashed (unseen, so the group has not moved its task yet)
// the standby's copy answers, marked stale.
func TestStoreServerRoutesLookups(t *testing.T) {
	const users, clicks, token = 20, 1000, "s3cret"
	b := startBroker(t)
	createTopic(t, b, "clicks", 4)
	topo := clickCounts(t)
	procs := []*queryProcess{startQueryProcess(t, b, topo, "a", token), startQueryProcess(t, b, topo, "b", token)}
	produceClicks(t, b, 0, clicks, users)
	client := &storeserver.Client{Token: token, Timeout: 5 * time.Second}
	ctx := context.Background()
	user := func(u int) string { return fmt.Sprintf("user-%02d", u) }

	// Settled: every user's count whole on its active, and every
	// standby caught up with what the actives logged.
	var unsettled string
	t.Cleanup(func() {
		if t.Failed() && unsettled != "" {
			t.Log("last seen unsettled: " + unsettled)
		}
	})
	waitFor(t, 60*time.Second, "every count on its active and every standby caught up", func() bool {
		for u := range users {
			ans, err := client.Lookup(ctx, procs[u%2].addr, "per-user", user(u))
			if err != nil || !ans.Found || ans.Value != float64(clicks/users) || ans.Stale {
				unsettled = fmt.Sprintf("%s: %+v, %v", user(u), ans, err)
				return false
			}
		}
		for _, p := range procs {
			st := p.runner.Supervisor().Instances()[0].Stats
			if len(st.Standbys) == 0 {
				unsettled = p.id + " has no standbys"
				return false
			}
			for _, sb := range st.Standbys {
				for _, s := range sb.Stores {
					if s.Lag != 0 || s.Offset == 0 {
						unsettled = fmt.Sprintf("%s: standby %+v", p.id, s)
						return false
					}
				}
			}
		}
		unsettled = ""
		return true
	})

	owned := map[string][]int{}
	for u := range users {
		md, err := procs[0].runner.Supervisor().QueryMetadata("per-user", user(u))
		if err != nil {
			t.Fatalf("QueryMetadata(%s): %v", user(u), err)
		}
		host := hostOf(procs, md.Active.InstanceID)
		if host == nil || md.Active.Server != host.addr || md.Task.Subtopology != 0 || md.Task.Partition != md.Partition {
			t.Fatalf("QueryMetadata(%s) = %+v; want the active among a and b with its server, task 0_<partition>", user(u), md)
		}
		active := host.runner.Supervisor().Instances()[0].Stats
		if !slices.ContainsFunc(active.Tasks, func(ts streams.TaskStats) bool { return ts.ID == md.Task }) {
			t.Errorf("QueryMetadata(%s) says %s runs task %s, but its stats show %v", user(u), md.Active.InstanceID, md.Task, taskIDs(active))
		}
		if len(md.Standbys) != 1 || md.Standbys[0].InstanceID == md.Active.InstanceID || md.Standbys[0].Server == "" {
			t.Errorf("QueryMetadata(%s) standbys = %+v; want the other instance", user(u), md.Standbys)
		}
		owned[md.Active.InstanceID] = append(owned[md.Active.InstanceID], u)
	}
	if len(owned["a"]) == 0 || len(owned["b"]) == 0 {
		t.Fatalf("keys by active %v: want some on each instance", owned)
	}

	// Asked of the process that does not own it, a key is answered by
	// the one that does.
	for _, asked := range procs {
		other := "a"
		if asked.id == "a" {
			other = "b"
		}
		u := owned[other][0]
		ans, err := client.Lookup(ctx, asked.addr, "per-user", user(u))
		if err != nil {
			t.Fatal(err)
		}
		if ans.Instance != other || ans.Server != hostOf(procs, other).addr || ans.Stale || ans.Value != float64(clicks/users) {
			t.Errorf("%s asked for %s (owned by %s) answered %+v", asked.id, user(u), other, ans)
		}
	}
	// What forwarding costs, for the log: 100 lookups of a key a holds
	// and of one b holds, both asked of a.
	for _, owner := range []string{"a", "b"} {
		start := time.Now()
		for range 100 {
			if _, err := client.Lookup(ctx, procs[0].addr, "per-user", user(owned[owner][0])); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("a lookup asked of a, of a key %s holds: %v on average", owner, time.Since(start)/100)
	}
	loc, err := client.Metadata(ctx, procs[0].addr, "per-user", user(owned["b"][0]))
	if err != nil || loc.Active.Instance != "b" {
		t.Errorf("metadata of %s: %+v, %v; want active b", user(owned["b"][0]), loc, err)
	}
	rows, err := client.Range(ctx, procs[1].addr, "per-user", "", "", 1000, false)
	if err != nil || len(rows.Rows) != users || len(rows.Unanswered) > 0 {
		t.Errorf("range over both processes: %d rows, unanswered %v, %v; want %d", len(rows.Rows), rows.Unanswered, err, users)
	}

	// The token is required and checked; bad requests name their field.
	for _, hdr := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest("GET", "http://"+procs[0].addr+"/v1/stores/per-user/lookup?key=user-01", nil)
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("lookup with Authorization %q: status %d, want 401", hdr, resp.StatusCode)
		}
	}
	var reqErr *storeserver.RequestError
	if _, err := (&storeserver.Client{Token: "wrong"}).Lookup(ctx, procs[0].addr, "per-user", "user-01"); !errors.As(err, &reqErr) || reqErr.Field != "token" {
		t.Errorf("lookup with a wrong token: %v; want a RequestError on the token", err)
	}
	if _, err := client.Lookup(ctx, procs[0].addr, "no-such", "user-01"); !errors.As(err, &reqErr) || !reqErr.Unknown || !strings.Contains(err.Error(), `"no-such"`) {
		t.Errorf("lookup in an unknown store: %v; want a 404 naming it", err)
	}
	if _, err := client.Range(ctx, procs[0].addr, "per-user", "", "", 0, false); !errors.As(err, &reqErr) || reqErr.Field != "limit" {
		t.Errorf("range with limit 0: %v; want a bad request naming limit", err)
	}

	// The standby answers for a crashed active, stale.
	u := owned["b"][0]
	if err := streams.CrashUnseen(procs[1].runner.Supervisor(), "b"); err != nil {
		t.Fatal(err)
	}
	ans, err := client.Lookup(ctx, procs[0].addr, "per-user", user(u))
	if err != nil {
		t.Fatalf("lookup of %s with its active crashed: %v", user(u), err)
	}
	if !ans.Stale || ans.Instance != "a" || ans.Value != float64(clicks/users) || ans.Lag != 0 {
		t.Errorf("lookup of %s with its active crashed: %+v; want a's standby copy, stale, %d, lag 0", user(u), ans, clicks/users)
	}
	hourly, err := client.Lookup(ctx, procs[0].addr, "hourly", user(u))
	if err != nil || !hourly.Stale || len(hourly.Windows) == 0 || hourly.Windows[len(hourly.Windows)-1].Value != float64(clicks/users) {
		t.Errorf("window lookup of %s with its active crashed: %+v, %v; want a's standby's windows, stale, the last counting %d", user(u), hourly, err, clicks/users)
	}
	direct, err := procs[0].runner.Supervisor().LookupKey("per-user", user(u), true)
	if err != nil || !direct.Standby || direct.Row.Value != int64(clicks/users) {
		t.Errorf("LookupKey(stale) on a: %+v, %v; want the standby's %d", direct, err, clicks/users)
	}
	var notHere *streams.TaskNotHereError
	if _, err := procs[0].runner.Supervisor().LookupKey("per-user", user(u), false); !errors.As(err, &notHere) {
		t.Errorf("LookupKey(active) on a of a key a keeps a standby of: %v; want a TaskNotHereError", err)
	}

	// Once the group has moved the task, the survivor answers as active.
	waitFor(t, 30*time.Second, "the survivor to answer as active", func() bool {
		ans, err := client.Lookup(ctx, procs[0].addr, "per-user", user(u))
		return err == nil && !ans.Stale && ans.Instance == "a" && ans.Value == float64(clicks/users)
	})
}

// TestStoreServerConfig: off loopback a token is required, by the
// server's config and a Runner's alike.
func TestStoreServerConfig(t *testing.T) {
	err := storeserver.Config{Addr: "0.0.0.0:7070"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "Token") {
		t.Errorf("Validate of a non-loopback address without a token: %v", err)
	}
	if err := (storeserver.Config{Addr: "127.0.0.1:7070"}).Validate(); err != nil {
		t.Errorf("Validate of a loopback address without a token: %v", err)
	}
	if err := (storeserver.Config{Addr: "10.1.2.3:7070", Token: "t"}).Validate(); err != nil {
		t.Errorf("Validate with a token: %v", err)
	}
	_, err = streams.NewRunner(clickCounts(t), streams.RunnerConfig{InstanceID: "a",
		Config: streams.Config{ApplicationID: "x", Brokers: []string{"127.0.0.1:9092"}, ApplicationServer: "10.1.2.3:7070"}})
	if err == nil || !strings.Contains(err.Error(), "Token") {
		t.Errorf("NewRunner advertising 10.1.2.3:7070 without a token: %v", err)
	}
	base := streams.Config{ApplicationID: "x", Brokers: []string{"127.0.0.1:9092"}}
	err = streams.RunnerConfig{InstanceID: "a", Config: base, QueryListen: "127.0.0.1:7070"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "QueryListen") {
		t.Errorf("Validate with QueryListen and no ApplicationServer: %v", err)
	}
	// The token rule is the listener's: a loopback advertised name does
	// not let a server listen on every interface without one.
	base.ApplicationServer = "localhost:7070"
	err = streams.RunnerConfig{InstanceID: "a", Config: base, QueryListen: "0.0.0.0:7070"}.Validate()
	if err == nil || !strings.Contains(err.Error(), `"0.0.0.0:7070" is not a loopback address`) {
		t.Errorf("Validate listening on 0.0.0.0 without a token: %v", err)
	}
}

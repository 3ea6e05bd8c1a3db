package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/broker"
)

// serving is a `braid serve` running in the test.
type serving struct {
	url    string // the designer's URL as printed
	broker string // the broker's address as printed, "" if none
	cancel context.CancelFunc
	done   chan error
	out    *syncBuffer
}

// startServe runs runServe with args and waits for it to print its URL.
// It runs no state demo unless args ask for one (their flag comes later
// and wins): seeding it takes seconds.
func startServe(t *testing.T, args ...string) *serving {
	t.Helper()
	args = append([]string{"--state-demo-keys", "0"}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{cancel: cancel, done: make(chan error, 1), out: &syncBuffer{}}
	// No state demo unless a test asks for it (a later flag wins): its
	// 500,000 seeded orders are for a person's make run.
	args = append([]string{"--state-demo-keys", "0"}, args...)
	go func() { s.done <- runServe(ctx, args, s.out) }()
	urlRE := regexp.MustCompile(`the designer is at (\S+)`)
	brokerRE := regexp.MustCompile(`embedded broker at (\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := urlRE.FindStringSubmatch(s.out.String()); m != nil && strings.Contains(s.out.String(), "stop with Ctrl-C") {
			s.url = m[1]
			if m := brokerRE.FindStringSubmatch(s.out.String()); m != nil {
				s.broker = m[1]
			}
			break
		}
		select {
		case err := <-s.done:
			cancel()
			t.Fatalf("serve ended before printing its URL: %v\n%s", err, s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve printed no URL in 30 s:\n%s", s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels serve and checks it ends cleanly.
func (s *serving) stop(t *testing.T) {
	t.Helper()
	if s.done == nil {
		return
	}
	s.cancel()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
	s.done = nil
}

func (s *serving) get(t *testing.T, path string, v any) int {
	t.Helper()
	res, err := http.Get(strings.TrimSuffix(s.url, "/") + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, data)
		}
	}
	return res.StatusCode
}

func (s *serving) designs(t *testing.T) []designer.Summary {
	t.Helper()
	var list []designer.Summary
	if st := s.get(t, "/api/designs", &list); st != 200 {
		t.Fatalf("GET /api/designs: %d", st)
	}
	return list
}

// TestServe: a new data directory gets the demo design, which compiles;
// the page and the broker work; a restart keeps what the user did (a
// deleted demo is not brought back); cancel stops everything.
func TestServeNoDemo(t *testing.T) {
	s := startServe(t, "--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-demo")
	var deployed []any
	if st := s.get(t, "/api/deployments", &deployed); st != 200 || len(deployed) != 0 {
		t.Errorf("GET /api/deployments with --no-demo: %d %v, want none", st, deployed)
	}
}

// TestServeStateDemo: a new data directory gets the state demo beside
// the demo, customer-totals, deployed on one instance with no standby,
// with one order for each of --state-demo-keys customers counted and a
// generator over them.
func TestServeStateDemo(t *testing.T) {
	s := startServe(t, "--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--state-demo-keys", "1000")
	ids := []string{}
	for _, d := range s.designs(t) {
		ids = append(ids, d.ID)
	}
	if !slices.Equal(ids, []string{"customer-totals", "orders-demo"}) {
		t.Fatalf("designs of a new data directory: %v, want customer-totals and orders-demo", ids)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var r struct {
			Found bool  `json:"found"`
			Value int64 `json:"value"`
		}
		if s.get(t, "/api/deployments/customer-totals/query?store=orders-per-customer&key=customer-999", &r) == 200 && r.Found && r.Value >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("customer-999 not counted within a minute:\n%s", s.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var info struct {
		Instances  int `json:"instances"`
		Standbys   int `json:"standbys"`
		Generators []struct {
			Keys int `json:"keys"`
		} `json:"generators"`
	}
	if st := s.get(t, "/api/deployments/customer-totals", &info); st != 200 || info.Instances != 1 || info.Standbys != 0 ||
		len(info.Generators) != 1 || info.Generators[0].Keys != 1000 {
		t.Errorf("the state demo deployment: %d %+v, want 1 instance, no standby and a generator over 1000 keys", st, info)
	}
	if !strings.Contains(s.out.String(), "the state demo (1000 customers) runs live at") {
		t.Errorf("serve did not print the state demo's live page:\n%s", s.out.String())
	}
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data-dir", dir}
	s := startServe(t, args...)
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") || s.broker == "" {
		t.Fatalf("printed URL %q, broker %q:\n%s", s.url, s.broker, s.out.String())
	}
	list := s.designs(t)
	if len(list) != 1 || list[0].ID != "orders-demo" || list[0].Name != "orders-demo" {
		t.Fatalf("designs of a new data directory: %+v, want the demo", list)
	}
	var got struct {
		Design *designer.Design `json:"design"`
	}
	if st := s.get(t, "/api/designs/orders-demo", &got); st != 200 {
		t.Fatalf("GET the demo: %d", st)
	}
	if _, err := compiler.Compile(got.Design, compiler.Options{}); err != nil {
		t.Errorf("the demo design does not compile: %v", err)
	}
	if n, ok := got.Design.Node("filter"); !ok || designer.ParamString(*n, "predicate") != "value.amount >= 50" {
		t.Errorf("demo filter %+v", n)
	}
	if st := s.get(t, "/designs/orders-demo", nil); st != 200 {
		t.Errorf("editor page: %d", st)
	}

	// The embedded broker answers.
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.broker))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = cl.Ping(ctx)
	cancel()
	cl.Close()
	if err != nil {
		t.Errorf("pinging the embedded broker at %s: %v", s.broker, err)
	}

	// The demo runs live: deployed with its generator, processing.
	var deployed []struct {
		ID         string `json:"id"`
		Instances  int    `json:"instances"`
		Standbys   int    `json:"standbys"`
		Generators []struct {
			Produced int64 `json:"produced"`
		} `json:"generators"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st := s.get(t, "/api/deployments", &deployed); st != 200 {
			t.Fatalf("GET /api/deployments: %d", st)
		}
		if len(deployed) == 1 && len(deployed[0].Generators) == 1 && deployed[0].Generators[0].Produced > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo deployment: %+v, want orders-demo with a generator that produced", deployed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(s.out.String(), "the demo design runs live at "+strings.TrimSuffix(s.url, "/")+"/live/orders-demo") {
		t.Errorf("serve did not print the live page of the demo:\n%s", s.out.String())
	}
	if d := deployed[0]; d.ID != "orders-demo" || d.Instances != 3 || d.Standbys != 1 {
		t.Errorf("the demo deployment: %+v, want orders-demo on 3 instances with 1 standby", d)
	}
	if st := s.get(t, "/live/orders-demo", nil); st != 200 {
		t.Errorf("live page: %d", st)
	}

	// A restart does not load the demo again.
	s.stop(t)
	s = startServe(t, args...)
	if list := s.designs(t); len(list) != 1 || list[0].Revisions != 1 {
		t.Errorf("after a restart: %+v, want the one demo, unchanged", list)
	}
	req, _ := http.NewRequest("DELETE", strings.TrimSuffix(s.url, "/")+"/api/designs/orders-demo", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 204 {
		t.Fatalf("deleting the demo: %d", res.StatusCode)
	}
	s.stop(t)
	s = startServe(t, args...)
	if list := s.designs(t); len(list) != 0 {
		t.Errorf("after deleting the demo and restarting: %+v, want none", list)
	}
	s.stop(t)
	if _, err := http.Get(s.url); err == nil {
		t.Error("the designer still answers after serve stopped")
	}
}

func TestServeAuthToken(t *testing.T) {
	dir := t.TempDir()
	// Off loopback, no token: refused, nothing started.
	err := runServe(context.Background(), []string{"--listen", "0.0.0.0:0", "--broker-listen", "", "--data-dir", dir}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "without an auth token") {
		t.Fatalf("serve on 0.0.0.0 without a token: %v", err)
	}
	s := startServe(t, "--listen", "0.0.0.0:0", "--broker-listen", "", "--auth-token", "tok", "--data-dir", dir)
	if !strings.HasSuffix(s.url, "/?token=tok") || s.broker != "" {
		t.Errorf("printed URL %q, broker %q", s.url, s.broker)
	}
	base := strings.TrimSuffix(s.url, "/?token=tok")
	res, err := http.Get(base + "/api/designs")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Errorf("without the token: %d, want 401", res.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/api/designs", nil)
	req.Header.Set("Authorization", "Bearer tok")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("with the token: %d, want 200", res.StatusCode)
	}
}

func TestServeFlags(t *testing.T) {
	var out strings.Builder
	if err := runServe(context.Background(), []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Usage: braid serve") {
		t.Errorf("--help: %v\n%s", err, out.String())
	}
	if err := runServe(context.Background(), []string{"extra"}, io.Discard); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("extra argument: %v", err)
	}
	dir := t.TempDir()
	if err := runServe(context.Background(), []string{"--listen", "nonsense", "--broker-listen", "", "--data-dir", dir}, io.Discard); err == nil {
		t.Error("a bad --listen was taken")
	}
	if err := runServe(context.Background(), []string{"--listen", "127.0.0.1:0", "--broker-listen", "nonsense", "--data-dir", filepath.Join(dir, "b")}, io.Discard); err == nil {
		t.Error("a bad --broker-listen was taken")
	}
}

// TestServeBrokerAuth: serve refuses to expose the embedded broker off
// loopback without SASL or --insecure-broker, naming the flags; with
// SASL credentials its own deployments and generators authenticate, and
// a client without them is refused.
func TestServeBrokerAuth(t *testing.T) {
	err := runServe(context.Background(), []string{"--listen", "127.0.0.1:0", "--broker-listen", "0.0.0.0:0", "--data-dir", t.TempDir()}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--broker-listen 0.0.0.0:0: broker listen address "0.0.0.0:0" is not loopback`) ||
		!strings.Contains(err.Error(), "--insecure-broker") || !strings.Contains(err.Error(), "--sasl-user") {
		t.Errorf("serve with the broker on 0.0.0.0 and no SASL: %v", err)
	}
	open := startServe(t, "--listen", "127.0.0.1:0", "--broker-listen", "0.0.0.0:0", "--insecure-broker", "--data-dir", t.TempDir(), "--no-demo")
	open.stop(t)

	s := startServe(t, "--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--sasl-user", "braid", "--sasl-password", "secret", "--data-dir", t.TempDir())
	authed, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.broker)}, broker.SASLClientOptions("braid", "secret")...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer authed.Close()
	adm := kadm.NewClient(authed)
	// The demo's generator produces and its instances commit: both
	// authenticated.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		offsets, err := adm.FetchOffsets(ctx, "braid-orders-demo")
		cancel()
		committed := int64(0)
		if err == nil {
			offsets.Each(func(o kadm.OffsetResponse) { committed += max(o.At, 0) })
		}
		if committed > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo committed no offsets on the SASL broker in a minute (%v):\n%s", err, s.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	anon, err := kgo.NewClient(kgo.SeedBrokers(s.broker), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(anon).ListTopics(ctx); err == nil {
		t.Error("a client without credentials listed the topics of the SASL broker")
	}
}

// TestServeDesignIDsFromNames: a design created through the API gets an
// id of its name, unique with a suffix, and so an application id a user
// recognises (braid-big-orders), not a random one.
func TestServeDesignIDsFromNames(t *testing.T) {
	s := startServe(t, "--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-demo")
	for _, want := range []string{"big-orders", "big-orders-2"} {
		res, err := http.Post(strings.TrimSuffix(s.url, "/")+"/api/designs", "application/json", strings.NewReader(`{"name": "Big orders"}`))
		if err != nil {
			t.Fatal(err)
		}
		var created struct{ Design designer.Design }
		err = json.NewDecoder(res.Body).Decode(&created)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("POST /api/designs: %s, %v", res.Status, err)
		}
		if created.Design.ID != want || designer.ApplicationID(&created.Design) != "braid-"+want {
			t.Errorf("created design %q, application %q; want %q, braid-%s", created.Design.ID, designer.ApplicationID(&created.Design), want, want)
		}
	}
}

// TestServeDemoOnAnOutsideFedTopic: on a cluster whose orders topic
// another producer feeds, serve deploys the demo without its generator
// (which would mix its records with theirs) and says so.
func TestServeDemoOnAnOutsideFedTopic(t *testing.T) {
	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := &kgo.Record{Topic: "orders", Key: []byte("shop-1"), Value: []byte(`{"customer": "shop-1", "amount": 70, "ts": 1}`)}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--listen", "127.0.0.1:0", "--brokers", b.Addrs()[0], "--data-dir", t.TempDir())
	deadline := time.Now().Add(30 * time.Second)
	want := `the demo design runs live at ` + strings.TrimSuffix(s.url, "/") + `/live/orders-demo, without its generator: topic "orders" is fed by another producer: 1 of its latest 1 records`
	for !strings.Contains(s.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not say %q:\n%s", want, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var deployed []struct {
		ID         string `json:"id"`
		Generators []any  `json:"generators"`
	}
	if st := s.get(t, "/api/deployments", &deployed); st != 200 || len(deployed) != 1 || deployed[0].ID != "orders-demo" || len(deployed[0].Generators) != 0 {
		t.Errorf("GET /api/deployments: %d %+v, want orders-demo without a generator", st, deployed)
	}
}

package web

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/datagen"
	"github.com/braidstream/braid/deploy"
)

// TestGeneratorSample reads a source topic's sample over HTTP: empty,
// then fed by an outside producer (its records, how many came from
// outside, a proposed template of their shape), where starting a
// generator answers 409 until confirmed; and once the generator's own
// records are the latest, none is counted as outside and a start needs
// no confirmation.
func TestGeneratorSample(t *testing.T) {
	ts, b := startLiveBroker(t, deploy.Config{})
	firstDeploy(t, ts, `{"design": "orders-windowed", "instances": 1, "standbys": 0}`)
	const sample = "/api/deployments/orders-windowed/generators/orders/sample"
	get := func() deploy.GeneratorSample {
		t.Helper()
		r := ts.do("GET", sample, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", sample, r.status, r)
		}
		var s deploy.GeneratorSample
		r.decode(t, &s)
		return s
	}
	if s := get(); s.Topic != "orders" || len(s.Records) != 0 || s.External != 0 || len(s.Proposal.Notes) != 1 {
		t.Errorf("the empty topic's sample %+v", s)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().UnixMilli()
	for i := range 6 {
		key := fmt.Sprintf("customer-%d", i%3)
		r := &kgo.Record{Topic: "orders", Key: []byte(key), Timestamp: time.UnixMilli(now + int64(i)),
			Value: fmt.Appendf(nil, `{"customer": %q, "amount": %d, "ts": %d}`, key, 10*(i+1), now+int64(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := get()
	if len(s.Records) != 6 || s.External != 6 {
		t.Fatalf("sample of 6 outside records: %d records, %d external: %+v", len(s.Records), s.External, s)
	}
	for _, r := range s.Records {
		if !strings.HasPrefix(r.Key, "customer-") || !strings.Contains(r.Value, `"amount"`) || r.Timestamp < now || r.Offset < 0 || len(r.Headers) != 0 {
			t.Errorf("sampled record %+v", r)
		}
	}
	want := map[string]string{"customer": "key", "amount": "random(10, 60)", "ts": "timestamp"}
	if p := s.Proposal; !reflect.DeepEqual(p.Template, want) || p.Keys != 3 || p.KeyPrefix != "customer" {
		t.Errorf("proposal %+v, want template %v over 3 customer keys", p, want)
	}

	const gens = "/api/deployments/orders-windowed/generators"
	spec := `{"topic": "orders", "rate": 200, "keys": 3, "keyPrefix": "customer", "template": {"customer": "key", "amount": "random(10, 60)", "ts": "timestamp"}`
	r := ts.do("POST", gens, spec+"}")
	if r.status != 409 || !strings.Contains(r.apiErr(t).Error, `topic "orders" is fed by another producer: 6 of its latest 6 records`) {
		t.Errorf("starting a generator on an outside producer's topic: %d %s, want 409 naming it", r.status, r)
	}
	if r := ts.do("POST", gens, spec+`, "confirmExternal": true}`); r.status != 201 {
		t.Fatalf("starting it confirmed: %d %s", r.status, r)
	}
	// The generator's records become the latest of every partition.
	deadline := time.Now().Add(20 * time.Second)
	for {
		s = get()
		if len(s.Records) > 0 && s.External == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the generator's records never were the latest: %d of %d sampled are external: %+v", s.External, len(s.Records), s.Records[len(s.Records)-1])
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range s.Records {
		if !r.FromGenerator() || !reflect.DeepEqual(r.Headers, []datagen.Header{{Key: datagen.GeneratorHeader, Value: "datagen"}}) {
			t.Errorf("the generator's record %+v", r)
		}
	}
	if r := ts.do("DELETE", gens+"/orders", ""); r.status != 204 {
		t.Fatalf("stopping the generator: %d %s", r.status, r)
	}
	if r := ts.do("POST", gens, spec+"}"); r.status != 201 {
		t.Errorf("starting a generator on a topic only the generator feeds: %d %s, want 201", r.status, r)
	}

	runCases(t, ts, []apiCase{
		{name: "not a source topic", method: "GET", path: "/api/deployments/orders-windowed/generators/nope/sample", status: 422,
			check: wantError(`topic: "nope" is not a source topic of the deployment (orders)`, 0, 0, "")},
		{name: "not deployed", method: "GET", path: "/api/deployments/nope/generators/orders/sample", status: 404},
	})
}

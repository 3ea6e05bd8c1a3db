package deploy_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/braidstream/braid/deploy"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestQueryShowsRowTimestamps deploys the credit-per-country design (a
// table re-grouped by country and summed) and checks that queries give
// each row's timestamp: a table row its record's, a sum the newest of
// the rows it adds up.
func TestQueryShowsRowTimestamps(t *testing.T) {
	h := start(t)
	data, err := os.ReadFile("../designer/testdata/credit-per-country.json")
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := h.store.Import(data)
	if err != nil {
		t.Fatal(err)
	}
	info, err := h.m.Deploy(deploy.Request{Design: d.ID, Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.DefaultProduceTopic(info.SourceTopics[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	base := time.Now().Add(-time.Hour).UnixMilli()
	for _, c := range []struct {
		id, country string
		credit      int
		at          int64
	}{{"c1", "NO", 10, base + 1000}, {"c2", "NO", 5, base + 3000}, {"c3", "SE", 7, base + 2000}, {"c1", "NO", 20, base + 500}} {
		v := fmt.Sprintf(`{"country": %q, "credit": %d}`, c.country, c.credit)
		r := &kgo.Record{Key: []byte(c.id), Value: []byte(v), Timestamp: time.UnixMilli(c.at)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// c1's last update is older than its first: NO's sum keeps c2's
	// newer timestamp, and c1's row has its own record's.
	want := map[string]string{"NO": fmt.Sprintf("25@%d", base+3000), "SE": fmt.Sprintf("7@%d", base+2000)}
	var res deploy.QueryResult
	waitFor(t, 30*time.Second, "both sums committed", func() bool {
		res, err = h.m.Query(d.ID, deploy.Query{Store: "credit-per-country"})
		if err != nil || len(res.Rows) != len(want) {
			return false
		}
		for _, r := range res.Rows {
			if fmt.Sprintf("%v@%d", r.Value, r.Timestamp) != want[fmt.Sprint(r.Key)] {
				return false
			}
		}
		return true
	})
	res, err = h.m.Query(d.ID, deploy.Query{Store: "customers", Key: "c1"})
	if err != nil || !res.Found || res.Timestamp == nil || *res.Timestamp != base+500 {
		t.Errorf("query of c1 = %+v, %v; want its row at %d", res, err, base+500)
	}
}

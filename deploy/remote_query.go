package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/braidstream/braid/runtime/storeserver"
)

// Store queries of an application other processes run go to the store
// servers its processes advertise (braid run --advertise, reported in
// telemetry): any one of them routes a lookup to the process holding the
// key, or to a standby's copy while that process is down, and fans a
// range scan out to all of them.

// remoteQueryTimeout bounds the query of one server: it forwards within
// its own bounds, so this covers a forward and a standby's answer.
const remoteQueryTimeout = 5 * time.Second

// queryRemote runs q against the watched application id through one of
// its live servers, trying the next when one does not answer.
func (m *Manager) queryRemote(id string, q Query) (QueryResult, error) {
	info, ok := m.watchedInfo(id)
	if !ok {
		return QueryResult{}, &RemoteError{ID: id, Op: "querying store " + q.Store, Reason: "none of its processes reports yet"}
	}
	i := slices.IndexFunc(info.Stores, func(st StoreInfo) bool { return st.Name == q.Store })
	if i < 0 {
		return QueryResult{}, &RequestError{Field: "store", Problem: fmt.Sprintf("deployment %q has no store %q", id, q.Store)}
	}
	res := QueryResult{Store: q.Store, Type: info.Stores[i].Type}
	if res.Type != "key-value" && q.Key == "" {
		return res, &RequestError{Field: "key", Problem: fmt.Sprintf("%q is a %s store: give a key to see its windows", q.Store, res.Type)}
	}
	servers := m.remoteServers(id)
	if len(servers) == 0 {
		return res, &RemoteError{ID: id, Op: "querying store " + q.Store,
			Reason: "none of its running instances advertises a store server (braid run --advertise host:port)"}
	}
	client := &storeserver.Client{Token: m.cfg.QueryToken, Timeout: remoteQueryTimeout}
	var errs []error
	for _, server := range servers {
		err := m.queryServer(client, server, q, &res)
		var un *storeserver.UnavailableError
		if !errors.As(err, &un) {
			return res, remoteQueryError(err)
		}
		errs = append(errs, err)
	}
	return res, fmt.Errorf("querying store %q of %q: %w", q.Store, id, &storeserver.UnavailableError{Err: errors.Join(errs...)})
}

// queryServer asks one server for q and fills res with its answer.
func (m *Manager) queryServer(client *storeserver.Client, server string, q Query, res *QueryResult) error {
	ctx := context.Background()
	if q.Key != "" {
		ans, err := client.Lookup(ctx, server, q.Store, q.Key)
		if err != nil {
			return err
		}
		res.Found, res.Value, res.Timestamp, res.Instance = ans.Found, ans.Value, ans.Timestamp, ans.Instance
		res.Stale, res.Lag = ans.Stale, ans.Lag
		for _, w := range ans.Windows {
			res.Windows = append(res.Windows, WindowRow(w))
		}
		return nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	ans, err := client.Range(ctx, server, q.Store, q.From, q.To, limit, false)
	if err != nil {
		return err
	}
	for _, r := range ans.Rows {
		res.Rows = append(res.Rows, Row(r))
	}
	res.Found, res.Truncated, res.Unanswered = len(res.Rows) > 0, ans.Truncated, ans.Unanswered
	return nil
}

// remoteServers returns the store servers the running instances of the
// watched application id advertise, as its telemetry last reported them.
func (m *Manager) remoteServers(id string) []string {
	var out []string
	for _, d := range m.cfg.Monitor.Snapshot().Deployments {
		if d.ID != id {
			continue
		}
		for _, in := range d.Instances {
			live := in.State == "running" || in.State == "rebalancing"
			if in.Server != "" && live && !slices.Contains(out, in.Server) {
				out = append(out, in.Server)
			}
		}
	}
	return out
}

// remoteQueryError turns a store server's refusal of a bad request into
// a RequestError naming the field.
func remoteQueryError(err error) error {
	var req *storeserver.RequestError
	if errors.As(err, &req) {
		return &RequestError{Field: req.Field, Problem: req.Problem}
	}
	return err
}

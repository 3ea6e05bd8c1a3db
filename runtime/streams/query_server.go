package streams

import (
	"errors"
	"fmt"
	"slices"

	"github.com/braidstream/braid/runtime/storeserver"
)

// QueryStores returns the Supervisor's instances' stores as a
// storeserver.Stores, for a storeserver.Server to serve (a Runner whose
// instances advertise an ApplicationServer serves them so itself). Keys
// and range bounds arrive as strings and are queried as strings, so the
// stores' key serdes must take strings (StringSerde, JSONSerde); a serde
// that refuses one makes the request a bad one, naming the key.
func (s *Supervisor) QueryStores() storeserver.Stores { return supervisorStores{s} }

type supervisorStores struct{ sup *Supervisor }

func (s supervisorStores) Locate(store, key string) (storeserver.Location, error) {
	md, err := s.sup.QueryMetadata(store, key)
	if err != nil {
		return storeserver.Location{}, queryServerError(err)
	}
	loc := storeserver.Location{Store: store, Key: key, Partition: md.Partition, Task: md.Task.String(),
		Active: storeserver.Member{Instance: md.Active.InstanceID, Server: md.Active.Server}}
	for _, h := range md.Standbys {
		loc.Standbys = append(loc.Standbys, storeserver.Member{Instance: h.InstanceID, Server: h.Server})
	}
	return loc, nil
}

func (s supervisorStores) Lookup(store, key string, stale bool) (storeserver.Answer, error) {
	res, err := s.sup.LookupKey(store, key, stale)
	if err != nil {
		return storeserver.Answer{}, queryServerError(err)
	}
	ans := storeserver.Answer{Store: store, Key: key, Found: res.Found, Instance: res.Instance, Task: res.Task.String(),
		Stale: res.Standby, Lag: res.Lag}
	for _, w := range res.Windows {
		ans.Windows = append(ans.Windows, storeserver.WindowRow{Start: w.Window.Start, End: w.Window.End, Value: w.Value, Timestamp: w.Timestamp})
	}
	if res.Found && res.Windows == nil {
		ans.Value, ans.Timestamp = res.Row.Value, &res.Row.Timestamp
	}
	return ans, nil
}

func (s supervisorStores) Range(store, from, to string, fn func(storeserver.Row) bool) error {
	stores := s.sup.topo.Stores()
	i := slices.IndexFunc(stores, func(st StoreInfo) bool { return st.Name == store })
	if i < 0 {
		return queryServerError(&UnknownStoreError{Store: store})
	}
	if t := stores[i].Type; t != "key-value" {
		return &storeserver.RequestError{Field: "store", Problem: fmt.Sprintf("%q is a %s store: look a key up to see its windows", store, t)}
	}
	bound := func(b string) any {
		if b == "" {
			return nil
		}
		return b
	}
	err := s.sup.RangeWithTimestamps(store, bound(from), bound(to), func(instance string, k any, row ValueAndTimestamp) bool {
		return fn(storeserver.Row{Key: k, Value: row.Value, Timestamp: row.Timestamp, Instance: instance})
	})
	return queryServerError(err)
}

func (s supervisorStores) Servers() []string {
	var out []string
	for _, m := range s.sup.Members() {
		if m.Server != "" && !slices.Contains(out, m.Server) {
			out = append(out, m.Server)
		}
	}
	return out
}

// queryServerError turns the runtime's query errors into those a
// storeserver.Server answers with: a bad request naming its field, or no
// copy able to answer now.
func queryServerError(err error) error {
	var unknown *UnknownStoreError
	var key *KeyError
	var notWindowed *NotWindowedError
	var none *NoAssignmentError
	var notHere *TaskNotHereError
	var notReady *StoreNotReadyError
	var busy *StoreBusyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unknown):
		return &storeserver.RequestError{Field: "store", Problem: err.Error(), Unknown: true}
	case errors.As(err, &key):
		return &storeserver.RequestError{Field: "key", Problem: err.Error()}
	case errors.As(err, &notWindowed):
		return &storeserver.RequestError{Field: "store", Problem: err.Error()}
	case errors.As(err, &none), errors.As(err, &notHere), errors.As(err, &notReady), errors.As(err, &busy):
		return &storeserver.UnavailableError{Err: err}
	}
	return err
}

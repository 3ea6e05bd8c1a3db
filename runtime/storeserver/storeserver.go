// Package storeserver answers interactive queries over HTTP: it serves
// the state stores of one process's instances of an application, and
// routes each key lookup to the process whose instance holds the key.
//
// Kafka Streams leaves this layer to its users (it says where a key lives
// and lets them write the RPC); Braid ships one, so that `braid run`
// processes, exported programs and `braid serve`'s store browser can ask
// any process for any key. A process advertises its server as its
// instances' Config.ApplicationServer in the group's join metadata; a
// lookup sent to any process is answered by the active owner of the key,
// forwarded there over HTTP if it lives in another process, and, while
// the active does not answer (its process down, its store restoring), by
// a standby replica's copy, marked stale with its lag. A range scan asks
// every member's server and merges their rows.
//
// The package knows nothing of the runtime's types: it serves a Stores,
// which runtime/streams implements over a Supervisor (a Runner starts the
// server itself when its instances advertise an address; see
// streams.RunnerConfig). The API, all JSON, all GET:
//
//	/v1/stores/{store}/lookup?key=K          an Answer
//	/v1/stores/{store}/range?from=&to=&limit= a RangeAnswer
//	/v1/stores/{store}/metadata?key=K        a Location
//
// A request may say local=1 (answer from this process's copies only; what
// a forwarded request says) and stale=1 (a standby copy may answer).
// Errors are an ErrorBody with the HTTP status: 400 for a bad request
// naming its field, 401 without the token, 404 for an unknown store, 503
// when no copy of the key could answer.
//
// Every request must carry the bearer token when one is set
// (Authorization: Bearer <token>); forwarded requests carry it too. A
// server listening off loopback without a token is a config error.
package storeserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"
)

// Stores is what a Server serves: the copies of the stores one process
// keeps, and where the group placed each key. Keys and bounds are the
// strings a request carries; the implementation turns them into the
// store's keys. Errors a client acts on are a *RequestError or an
// *UnavailableError.
type Stores interface {
	// Locate says which partition of the store key belongs to, and which
	// members keep the active and standby copies of it.
	Locate(store, key string) (Location, error)
	// Lookup reads key from a copy this process keeps: the active one,
	// or with stale a standby one too. It returns an *UnavailableError
	// when the process keeps no copy that can answer.
	Lookup(store, key string, stale bool) (Answer, error)
	// Range calls fn for the rows of the active copies of a key-value
	// store this process keeps whose keys are in [from, to) ("" is
	// open), until fn returns false.
	Range(store, from, to string, fn func(Row) bool) error
	// Servers returns the servers the group's members advertise, this
	// process's among them.
	Servers() []string
}

// Location is where a key lives, as the last rebalance placed it.
type Location struct {
	Store     string   `json:"store"`
	Key       string   `json:"key"`
	Partition int32    `json:"partition"`
	Task      string   `json:"task"`
	Active    Member   `json:"active"`
	Standbys  []Member `json:"standbys,omitempty"`
}

// Member is an instance and the server its process advertises.
type Member struct {
	Instance string `json:"instance"`
	Server   string `json:"server,omitempty"`
}

// Answer is a key lookup's answer: the key's row in a key-value store, or
// its windows in a window or session store, and the copy it came from.
// Stale says a standby replica answered, Lag how many changelog records
// it had not applied yet.
type Answer struct {
	Store     string      `json:"store"`
	Key       string      `json:"key"`
	Found     bool        `json:"found"`
	Value     any         `json:"value,omitempty"`
	Timestamp *int64      `json:"timestamp,omitempty"`
	Windows   []WindowRow `json:"windows,omitempty"`
	Instance  string      `json:"instance,omitempty"`
	Task      string      `json:"task,omitempty"`
	// Server is the server of the process that answered.
	Server string `json:"server,omitempty"`
	Stale  bool   `json:"stale,omitempty"`
	Lag    int64  `json:"lag,omitempty"`
}

// WindowRow is one window of the looked-up key, with its timestamp (the
// newest of the window's records).
type WindowRow struct {
	Start     int64 `json:"start"`
	End       int64 `json:"end"`
	Value     any   `json:"value"`
	Timestamp int64 `json:"timestamp"`
}

// Row is one row of a key-value store, with its timestamp and the
// instance that holds it.
type Row struct {
	Key       any    `json:"key"`
	Value     any    `json:"value"`
	Timestamp int64  `json:"timestamp"`
	Instance  string `json:"instance"`
}

// RangeAnswer is a range scan's rows from every server that answered.
// Truncated says the limit cut them short; Unanswered lists the servers
// that did not answer, whose rows are missing.
type RangeAnswer struct {
	Store      string   `json:"store"`
	Rows       []Row    `json:"rows"`
	Truncated  bool     `json:"truncated,omitempty"`
	Unanswered []string `json:"unanswered,omitempty"`
}

// ErrorBody is the JSON of an error answer. Field names the request's
// field that was wrong ("store", "key", "from", "to", "limit"), if one
// was.
type ErrorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// RequestError is a bad request, naming the field that was wrong. Unknown
// marks an unknown store (404).
type RequestError struct {
	Field, Problem string
	Unknown        bool
}

func (e *RequestError) Error() string { return e.Field + ": " + e.Problem }

// UnavailableError says no copy could answer now: the process keeps none
// of the key, or its copy is restoring or busy, or the group has not
// assigned the store's tasks yet. Another copy may answer, or this one
// later.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Config configures a Server.
type Config struct {
	// Addr is the host:port the server listens on. Default
	// 127.0.0.1:0 (a free port).
	Addr string
	// Advertised is the address the group's members know this process
	// by (its instances' ApplicationServer): a key whose copy a member of
	// that address keeps is read here. Default: Addr.
	Advertised string
	// Token is the bearer token every request must carry, and forwarded
	// requests carry. Required unless Addr is a loopback address.
	Token string
	// ForwardTimeout bounds each request forwarded to another process.
	// Default 2 s.
	ForwardTimeout time.Duration
	// Logger logs failed forwards. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with its unset fields at their defaults.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Advertised == "" {
		c.Advertised = c.Addr
	}
	if c.ForwardTimeout == 0 {
		c.ForwardTimeout = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports every problem of c at once, each naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("store server config %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Addr != "" {
		if host, _, err := net.SplitHostPort(c.Addr); err != nil {
			bad("Addr", "%q is not host:port: %v", c.Addr, err)
		} else if c.Token == "" && !IsLoopback(host) {
			bad("Token", "empty, but Addr %q is not a loopback address: anyone who reaches it could read the stores; give a token", c.Addr)
		}
	}
	if c.ForwardTimeout < 0 {
		bad("ForwardTimeout", "%v is negative", c.ForwardTimeout)
	}
	return errors.Join(errs...)
}

// IsLoopback reports whether host (a name or an address) is this
// machine's loopback: "localhost" or a loopback IP. "" (every interface)
// is not.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

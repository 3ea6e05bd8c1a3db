package storeserver

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Server is the HTTP server of one process's stores. Run serves them;
// Handler is the same routes for another server to mount.
type Server struct {
	cfg    Config
	stores Stores
	client *Client
	mux    *http.ServeMux
}

// New checks cfg (after WithDefaults) and returns a Server of stores.
func New(stores Stores, cfg Config) (*Server, error) {
	if stores == nil {
		return nil, errors.New("creating store server: Stores is nil")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("creating store server: %w", err)
	}
	s := &Server{cfg: cfg, stores: stores, client: &Client{Token: cfg.Token, Timeout: cfg.ForwardTimeout}, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /v1/stores/{store}/lookup", s.lookup)
	s.mux.HandleFunc("GET /v1/stores/{store}/range", s.rangeScan)
	s.mux.HandleFunc("GET /v1/stores/{store}/metadata", s.metadata)
	return s, nil
}

// Handler returns the server's routes, behind its token check.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="braid stores"`)
				writeJSON(w, http.StatusUnauthorized, ErrorBody{Error: "missing or wrong bearer token"})
				return
			}
		}
		s.mux.ServeHTTP(w, r)
	})
}

// Run listens on Config.Addr and serves until ctx ends, then shuts down,
// letting requests in flight finish for up to ForwardTimeout. It returns
// an error when it cannot listen, nil after ctx ended.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("store server: listening on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener of the caller's, which it closes.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("store server on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ForwardTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done // http.ErrServerClosed
	return nil
}

// lookup answers a key lookup: locally when the request says local=1,
// else from the key's active copy wherever it is, else from a standby's.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	store, q := r.PathValue("store"), r.URL.Query()
	key, ok := requiredKey(w, q.Get("key"), q.Has("key"))
	if !ok {
		return
	}
	stale := q.Get("stale") == "1"
	if q.Get("local") == "1" {
		ans, err := s.stores.Lookup(store, key, stale)
		if err != nil {
			writeError(w, err)
			return
		}
		ans.Server = s.cfg.Advertised
		writeJSON(w, http.StatusOK, ans)
		return
	}
	ans, err := s.route(r.Context(), store, key)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// route asks the key's active copy, then its standbys' in turn, for the
// key, and returns the first answer. A copy that does not answer (its
// process unreachable, its store not ready) is passed over; a bad request
// is returned at once.
func (s *Server) route(ctx context.Context, store, key string) (Answer, error) {
	loc, err := s.stores.Locate(store, key)
	if err != nil {
		return Answer{}, err
	}
	var tried []string
	ask := func(m Member, stale bool) (Answer, bool, error) {
		ans, err := s.ask(ctx, m.Server, store, key, stale)
		if err == nil {
			return ans, true, nil
		}
		var req *RequestError
		if errors.As(err, &req) {
			return Answer{}, false, err
		}
		tried = append(tried, fmt.Sprintf("%s (%s): %v", m.Instance, cmp.Or(m.Server, "no server"), err))
		return Answer{}, false, nil
	}
	if ans, ok, err := ask(loc.Active, false); ok || err != nil {
		return ans, err
	}
	for _, m := range loc.Standbys {
		if ans, ok, err := ask(m, true); ok || err != nil {
			return ans, err
		}
	}
	return Answer{}, &UnavailableError{Err: fmt.Errorf("store %q, key %q (task %s): no copy answered: %s", store, key, loc.Task, strings.Join(tried, "; "))}
}

// ask reads key from the copy the process at server keeps: this one's
// directly (a member that advertises nothing can only be asked here), any
// other's over HTTP.
func (s *Server) ask(ctx context.Context, server, store, key string, stale bool) (Answer, error) {
	if server == "" || server == s.cfg.Advertised {
		ans, err := s.stores.Lookup(store, key, stale)
		ans.Server = s.cfg.Advertised
		return ans, err
	}
	return s.client.lookup(ctx, server, store, key, true, stale)
}

// rangeScan answers a range scan: this process's rows with local=1, else
// every member's, merged in the order the servers answer.
func (s *Server) rangeScan(w http.ResponseWriter, r *http.Request) {
	store, q := r.PathValue("store"), r.URL.Query()
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			writeError(w, &RequestError{Field: "limit", Problem: fmt.Sprintf("%q is not a positive number", l)})
			return
		}
		limit = n
	}
	from, to := q.Get("from"), q.Get("to")
	ans := RangeAnswer{Store: store, Rows: []Row{}}
	add := func(row Row) bool {
		if len(ans.Rows) == limit {
			ans.Truncated = true
			return false
		}
		ans.Rows = append(ans.Rows, row)
		return true
	}
	if err := s.stores.Range(store, from, to, add); err != nil {
		writeError(w, err)
		return
	}
	if q.Get("local") != "1" {
		for _, server := range s.stores.Servers() {
			if server == "" || server == s.cfg.Advertised || ans.Truncated {
				continue
			}
			part, err := s.client.Range(r.Context(), server, store, from, to, limit, true)
			if err != nil {
				var req *RequestError
				if errors.As(err, &req) {
					writeError(w, err)
					return
				}
				s.cfg.Logger.Warn("store server: a range scan got no rows from a member", "server", server, "store", store, "err", err)
				ans.Unanswered = append(ans.Unanswered, server)
				continue
			}
			for _, row := range part.Rows {
				if !add(row) {
					break
				}
			}
			ans.Truncated = ans.Truncated || part.Truncated && len(ans.Rows) == limit
		}
	}
	writeJSON(w, http.StatusOK, ans)
}

// metadata answers where a key lives.
func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, ok := requiredKey(w, q.Get("key"), q.Has("key"))
	if !ok {
		return
	}
	loc, err := s.stores.Locate(r.PathValue("store"), key)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, loc)
}

func requiredKey(w http.ResponseWriter, key string, given bool) (string, bool) {
	if !given {
		writeError(w, &RequestError{Field: "key", Problem: "missing: give ?key="})
		return "", false
	}
	return key, true
}

// writeError answers err with its status: 400 or 404 for a
// *RequestError, 503 for an *UnavailableError, 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	var req *RequestError
	var un *UnavailableError
	switch {
	case errors.As(err, &req):
		status := http.StatusBadRequest
		if req.Unknown {
			status = http.StatusNotFound
		}
		writeJSON(w, status, ErrorBody{Error: req.Problem, Field: req.Field})
	case errors.As(err, &un):
		writeJSON(w, http.StatusServiceUnavailable, ErrorBody{Error: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, ErrorBody{Error: err.Error()})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, fmt.Appendf(nil, `{"error":%q}`, "encoding the answer: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

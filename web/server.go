package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/web/wsbridge"
)

// DefaultListen is where the server listens when Config.Listen is empty.
const DefaultListen = "127.0.0.1:8080"

// DefaultBodyLimit is the largest request body when Config.BodyLimit is 0.
const DefaultBodyLimit = 4 << 20

// shutdownTimeout bounds how long Listen waits for requests in flight
// once its context ends.
const shutdownTimeout = 10 * time.Second

// Config says where the server listens and what it serves.
type Config struct {
	// Listen is host:port; default DefaultListen. Port 0 picks a free
	// port (Server.Addr tells which).
	Listen string
	// AuthToken, when set, is required by every request (see the package
	// documentation). It must be set to listen on a non-loopback address.
	AuthToken string
	// Store holds the designs; required.
	Store *designer.Store
	// Logger gets a line per failed request and per start and stop;
	// default: discard.
	Logger *slog.Logger
	// BodyLimit is the largest request body in bytes; default
	// DefaultBodyLimit. Larger bodies get 413.
	BodyLimit int
	// Deployments and Monitor, when both are set, add the deployments
	// API, the live pages, their websocket and /metrics.
	Deployments *deploy.Manager
	Monitor     *monitor.Monitor
}

// Server is the designer's HTTP server. It is listening from New on; Listen
// serves until its context ends.
type Server struct {
	cfg Config
	app *fiber.App
	// bridge serves the websockets and closes them on shutdown, which
	// fiber does not track.
	bridge *wsbridge.Bridge
	ln     *lingerListener
	addr   string
	log    *slog.Logger
	store  *designer.Store
	// loopback is whether the listener is on a loopback address.
	loopback bool
	// saving serializes the check-then-save of mutations (baseRevision,
	// existence), which the store cannot do in one step.
	saving sync.Mutex

	// metricsRegistry gathers /metrics; nil without live routes.
	metricsRegistry *prometheus.Registry

	closeOnce sync.Once
	closeErr  error
}

// New checks cfg, binds its address and returns the server, which accepts
// connections from then on but answers them only once Listen runs. On a
// non-loopback address without cfg.AuthToken it refuses, binding nothing.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("web: Config.Store is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.BodyLimit == 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.BodyLimit < 0 {
		return nil, fmt.Errorf("web: BodyLimit %d is negative", cfg.BodyLimit)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if strings.ContainsAny(cfg.AuthToken, " \t\r\n") {
		return nil, errors.New("web: the auth token must not contain white space")
	}
	if cfg.AuthToken == "" && !loopbackHost(cfg.Listen) {
		return nil, fmt.Errorf("web: refusing to listen on %s, which is not a loopback address, without an auth token", cfg.Listen)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("web: listen on %s: %w", cfg.Listen, err)
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	loopback := tcp != nil && tcp.IP.IsLoopback()
	if !loopback && cfg.AuthToken == "" {
		// A host name that resolved to a non-loopback address.
		ln.Close()
		return nil, fmt.Errorf("web: refusing to listen on %s (%s), which is not a loopback address, without an auth token", cfg.Listen, ln.Addr())
	}
	s := &Server{cfg: cfg, ln: newLingerListener(ln), addr: ln.Addr().String(), log: cfg.Logger, store: cfg.Store, loopback: loopback,
		bridge: wsbridge.New(wsbridge.Options{Logger: cfg.Logger})}
	s.app = fiber.New(fiber.Config{
		AppName:               "braid",
		BodyLimit:             cfg.BodyLimit,
		DisableStartupMessage: true,
		// Params, bodies and headers stay valid after a handler returns
		// (the websocket bridge will need that).
		Immutable:    true,
		ErrorHandler: s.handleError,
		// Expressions keep their < and > in answers.
		JSONEncoder:  marshalJSON,
		ReadTimeout:  30 * time.Second,
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
		// Trust no proxy: X-Forwarded-Host and -Proto must not stand in
		// for the Host header the loopback and origin checks read.
		EnableTrustedProxyCheck: true,
		// No endpoint reads forms; a multipart body gets 415 like any
		// other that is not JSON.
		DisablePreParseMultipartForm: true,
	})
	s.routes()
	return s, nil
}

// marshalJSON is json.Marshal without HTML escaping: answers are
// application/json, never HTML.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// loopbackHost reports whether host:port names a loopback host: an IP
// literal on loopback, or localhost. An empty host (all addresses) or
// any other name is not.
func loopbackHost(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	return isLoopbackName(host)
}

func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// URL returns the address of the designs list, http://<addr>/, with
// ?token=... when there is a token (a browser opening it gets the cookie).
// A server on all addresses is shown on the loopback one.
func (s *Server) URL() string {
	host, port, _ := net.SplitHostPort(s.addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/"}
	if s.cfg.AuthToken != "" {
		u.RawQuery = url.Values{"token": {s.cfg.AuthToken}}.Encode()
	}
	return u.String()
}

// Listen serves requests until ctx ends, then shuts down gracefully:
// it stops accepting, lets requests in flight finish (for up to 10 s) and
// returns nil. It returns early with the error that stopped serving.
// A Server serves once; Listen closes it.
func (s *Server) Listen(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- s.app.Listener(s.ln) }()
	s.log.Info("web: serving the designer", "addr", s.addr, "auth", s.cfg.AuthToken != "")
	select {
	case err := <-served:
		s.Close()
		if err != nil {
			return fmt.Errorf("web: serving on %s: %w", s.addr, err)
		}
		return errors.New("web: the server stopped unexpectedly")
	case <-ctx.Done():
	}
	err := s.Close()
	<-served
	s.log.Info("web: stopped", "addr", s.addr)
	return err
}

// Close stops the server: it stops accepting and waits (up to 10 s) for
// requests in flight. Closing a server that never served releases its
// address. Closing twice is harmless.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		// Websockets first: fiber's shutdown does not see them.
		if err := s.bridge.Shutdown(ctx); err != nil {
			s.log.Warn("web: websockets did not close in time", "err", err)
		}
		// Shutdown closes the listener too, whether or not it served.
		if err := s.app.ShutdownWithContext(ctx); err != nil {
			s.closeErr = fmt.Errorf("web: shutting down: %w", err)
		}
		s.ln.Close()
		s.ln.stopLingering()
	})
	return s.closeErr
}

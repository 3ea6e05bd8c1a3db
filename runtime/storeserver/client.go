package storeserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Client asks a store server for keys and ranges: what a Server forwards
// with, and what another program (`braid serve`'s store browser) asks a
// process with. Its zero value has no token and a 2 s timeout.
type Client struct {
	// Token is the bearer token sent with every request.
	Token string
	// Timeout bounds each request. Default 2 s.
	Timeout time.Duration
	// HTTP is the client requests go through. Default: a client of the
	// default transport.
	HTTP *http.Client
}

// StatusError is a server's error answer (or a proxy's: Message is then
// the start of its body), with its status.
type StatusError struct {
	Server  string
	Status  int
	Field   string
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("store server %s answered %d: %s", e.Server, e.Status, e.Message)
}

// Lookup asks server for key of store, routed to the key's owner as a
// Server routes it.
func (c *Client) Lookup(ctx context.Context, server, store, key string) (Answer, error) {
	return c.lookup(ctx, server, store, key, false, false)
}

// lookup asks server for key; local makes it answer from its own copies,
// stale lets a standby copy answer. A bad request comes back as a
// *RequestError, any other failure as an *UnavailableError: for a
// router, a copy that did not answer.
func (c *Client) lookup(ctx context.Context, server, store, key string, local, stale bool) (Answer, error) {
	q := url.Values{"key": {key}}
	if local {
		q.Set("local", "1")
	}
	if stale {
		q.Set("stale", "1")
	}
	var ans Answer
	err := c.get(ctx, server, store, "lookup", q, &ans)
	return ans, err
}

// Range asks server for the rows of store in [from, to) ("" is open), at
// most limit; local asks for its process's rows only, else it asks every
// member's.
func (c *Client) Range(ctx context.Context, server, store, from, to string, limit int, local bool) (RangeAnswer, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	if local {
		q.Set("local", "1")
	}
	var ans RangeAnswer
	err := c.get(ctx, server, store, "range", q, &ans)
	return ans, err
}

// Metadata asks server where key of store lives.
func (c *Client) Metadata(ctx context.Context, server, store, key string) (Location, error) {
	var loc Location
	err := c.get(ctx, server, store, "metadata", url.Values{"key": {key}}, &loc)
	return loc, err
}

// get sends one request and decodes its answer into out. A 400 or 404
// answer is a *RequestError wrapping the *StatusError; any other failure
// an *UnavailableError.
func (c *Client) get(ctx context.Context, server, store, op string, q url.Values, out any) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := url.URL{Scheme: "http", Host: server, Path: "/v1/stores/" + store + "/" + op, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return &RequestError{Field: "store", Problem: fmt.Sprintf("making a request to %s: %v", server, err)}
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return &UnavailableError{Err: fmt.Errorf("asking store server %s: %w", server, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &UnavailableError{Err: fmt.Errorf("reading the answer of store server %s: %w", server, err)}
	}
	if resp.StatusCode != http.StatusOK {
		var eb ErrorBody
		if json.Unmarshal(body, &eb) != nil || eb.Error == "" {
			eb.Error = string(body[:min(len(body), 200)])
		}
		se := &StatusError{Server: server, Status: resp.StatusCode, Field: eb.Field, Message: eb.Error}
		switch resp.StatusCode {
		case http.StatusBadRequest, http.StatusNotFound:
			return &RequestError{Field: eb.Field, Problem: eb.Error, Unknown: resp.StatusCode == http.StatusNotFound}
		case http.StatusUnauthorized:
			// Every process of an application shares the token: a
			// refusal is a misconfiguration, not a copy to pass over.
			return &RequestError{Field: "token", Problem: se.Error()}
		}
		return &UnavailableError{Err: se}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &UnavailableError{Err: fmt.Errorf("decoding the answer of store server %s: %w", server, err)}
	}
	return nil
}

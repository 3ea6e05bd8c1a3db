package web

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

// checkSecurityHeaders checks the headers every answer carries.
func checkSecurityHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self';", "frame-ancestors 'none'", "object-src 'none'", "connect-src 'self'", "img-src 'self' data:"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(strings.SplitN(strings.SplitN(csp, "script-src", 2)[1], ";", 2)[0], "unsafe-inline") {
		t.Errorf("%s: scripts may run inline or eval: %q", what, csp)
	}
	for name, want := range map[string]string{
		"X-Content-Type-Options": "nosniff",
		"X-Frame-Options":        "DENY",
		"Referrer-Policy":        "no-referrer",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s: %s %q, want %q", what, name, got, want)
		}
	}
}

// TestSecurityHeaders: every kind of answer carries them, errors too.
func TestSecurityHeaders(t *testing.T) {
	ts := start(t, Config{BodyLimit: 1024})
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/api/catalog", "", 200},
		{"GET", "/", "", 200},
		{"GET", "/designs/nope", "", 404},
		{"GET", "/api/designs/nope", "", 404},
		{"GET", "/nowhere", "", 404},
		{"POST", "/api/validate", strings.Repeat(" ", 2048) + "{}", 413},
		{"POST", "/api/validate", "{", 400},
	} {
		r := ts.do(tc.method, tc.path, tc.body)
		if r.status != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, r.status, tc.status)
		}
		checkSecurityHeaders(t, tc.method+" "+tc.path, r.header)
	}
	r := ts.do("GET", "/api/catalog", "")
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("API Cache-Control %q, want no-store", cc)
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "ws://"+strings.TrimPrefix(ts.base, "http://")) {
		t.Errorf("connect-src does not name this host's websockets: %q", csp)
	}
}

func TestBodyLimit(t *testing.T) {
	ts := start(t, Config{BodyLimit: 4096})
	orders := readTestdata(t, "orders-windowed.json")
	big := `{"name": "` + strings.Repeat("x", 5000) + `"}`
	for _, path := range []string{"/api/designs", "/api/designs/import", "/api/validate", "/api/compile", "/api/preview"} {
		r := ts.do("POST", path, big)
		if r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s of %d bytes: status %d, want 413: %s", path, len(big), r.status, r.body)
			continue
		}
		if e := r.apiErr(t); !strings.Contains(e.Error, "larger than the limit of 4 KiB") {
			t.Errorf("413 error %q", e.Error)
		}
	}
	// Under the limit passes; the default limit is 4 MiB.
	if r := ts.do("POST", "/api/validate", orders); r.status != 200 || len(orders) > 4096 {
		t.Errorf("a design of %d bytes: status %d", len(orders), r.status)
	}
	def := start(t, Config{})
	if def.srv.cfg.BodyLimit != 4<<20 {
		t.Errorf("default body limit %d", def.srv.cfg.BodyLimit)
	}
	huge := `{"name": "` + strings.Repeat("x", 4<<20) + `"}`
	if r := def.do("POST", "/api/designs", huge); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 4 MiB: status %d", r.status)
	}
	// The filler is a parameter's value: a design's name is short by rule.
	if r := def.do("POST", "/api/designs", `{"name": "big", "nodes": [{"id": "f", "kind": "filter", "params": {"predicate": "`+strings.Repeat("x", 3<<20)+`"}}]}`); r.status != http.StatusCreated {
		t.Errorf("a body of 3 MiB: status %d", r.status)
	}
}

// TestCrossSite: mutations a browser marks cross-site, or from another
// origin, or not JSON, are refused; the same from this origin pass.
func TestCrossSite(t *testing.T) {
	ts := start(t, Config{})
	self := ts.base
	runCases(t, ts, []apiCase{
		{name: "other origin", method: "POST", path: "/api/designs", body: `{}`, headers: []string{"Origin", "http://evil.example"}, status: 403,
			contains: []string{"cross-site request refused"}},
		{name: "null origin", method: "POST", path: "/api/designs", body: `{}`, headers: []string{"Origin", "null"}, status: 403},
		{name: "other port", method: "POST", path: "/api/designs", body: `{}`, headers: []string{"Origin", "http://127.0.0.1:1"}, status: 403},
		{name: "https origin", method: "POST", path: "/api/designs", body: `{}`, headers: []string{"Origin", strings.Replace(self, "http:", "https:", 1)}, status: 403},
		{name: "cross-site fetch", method: "POST", path: "/api/designs", body: `{}`, headers: []string{"Sec-Fetch-Site", "cross-site"}, status: 403},
		{name: "same-site fetch", method: "DELETE", path: "/api/designs/x", headers: []string{"Sec-Fetch-Site", "same-site"}, status: 403},
		{name: "cross-site put", method: "PUT", path: "/api/designs/x", body: `{}`, headers: []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, status: 403},
		{name: "form post", method: "POST", path: "/api/designs", body: `name=x`, headers: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 415,
			contains: []string{"application/json"}},
		{name: "text/plain post", method: "POST", path: "/api/designs/import", body: `{}`, headers: []string{"Content-Type", "text/plain"}, status: 415},
		{name: "multipart post", method: "POST", path: "/api/validate", body: `{}`, headers: []string{"Content-Type", "multipart/form-data; boundary=x"}, status: 415},
		{name: "same origin", method: "POST", path: "/api/designs", body: `{}`, headers: []string{"Origin", self, "Sec-Fetch-Site", "same-origin"}, status: 201},
		{name: "json with charset", method: "POST", path: "/api/designs", body: `{}`, headers: []string{"Content-Type", "application/json; charset=utf-8"}, status: 201},
		{name: "no browser headers", method: "POST", path: "/api/designs", body: `{}`, status: 201},
		{name: "cross-site read is not a mutation", method: "GET", path: "/api/designs", headers: []string{"Sec-Fetch-Site", "cross-site"}, status: 200},
	})
}

// TestHostCheck: without a token, only loopback names may be the Host
// (DNS rebinding).
func TestHostCheck(t *testing.T) {
	ts := start(t, Config{})
	_, port, _ := net.SplitHostPort(ts.srv.Addr())
	for host, want := range map[string]int{
		"127.0.0.1:" + port:        200,
		"localhost:" + port:        200,
		"LOCALHOST":                200,
		"app.localhost:" + port:    200,
		"[::1]:" + port:            200,
		"evil.example:" + port:     403,
		"127.0.0.1.nip.io:" + port: 403,
		"10.0.0.1:" + port:         403,
	} {
		r := ts.do("GET", "/api/designs", "", "Host", host)
		if r.status != want {
			t.Errorf("Host %s: status %d, want %d", host, r.status, want)
		}
	}
	// X-Forwarded-Host does not stand in for Host.
	if r := ts.do("GET", "/api/designs", "", "Host", "evil.example", "X-Forwarded-Host", "127.0.0.1"); r.status != 403 {
		t.Errorf("X-Forwarded-Host passed the host check: %d", r.status)
	}
	if r := ts.do("GET", "/", "", "Host", "evil.example"); r.status != 403 || !strings.Contains(r.String(), "<html") {
		t.Errorf("page with a foreign Host: %d, want an HTML 403", r.status)
	}
}

// TestAuthToken: off loopback a token is required to start; with a
// token, every API call and page needs it.
func TestAuthToken(t *testing.T) {
	const token = "correct-horse-battery"
	ts := start(t, Config{Listen: "0.0.0.0:0", AuthToken: token})
	if ts.srv.loopback {
		t.Fatal("a server on 0.0.0.0 takes itself for loopback")
	}
	bearer := "Bearer " + token
	runCases(t, ts, []apiCase{
		{name: "api without token", method: "GET", path: "/api/designs", status: 401, check: func(t *testing.T, r *response) {
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
			}
		}},
		{name: "api with a wrong token", method: "GET", path: "/api/designs", headers: []string{"Authorization", "Bearer wrong"}, status: 401},
		{name: "api with a prefix of the token", method: "GET", path: "/api/designs", headers: []string{"Authorization", "Bearer correct"}, status: 401},
		{name: "api with basic auth", method: "GET", path: "/api/designs", headers: []string{"Authorization", "Basic " + token}, status: 401},
		{name: "api with the token in the query", method: "GET", path: "/api/designs?token=" + token, status: 401},
		{name: "api with the token", method: "GET", path: "/api/designs", headers: []string{"Authorization", bearer}, status: 200},
		{name: "api with the cookie", method: "GET", path: "/api/designs", headers: []string{"Cookie", tokenCookie + "=" + token}, status: 200},
		{name: "api with a wrong cookie", method: "GET", path: "/api/designs", headers: []string{"Cookie", tokenCookie + "=nope"}, status: 401},
		{name: "mutation without token", method: "POST", path: "/api/designs", body: `{}`, status: 401},
		{name: "mutation with token", method: "POST", path: "/api/designs", body: `{}`, headers: []string{"Authorization", bearer}, status: 201},
		{name: "any host with the token", method: "GET", path: "/api/catalog", headers: []string{"Authorization", bearer, "Host", "braid.example:8080"}, status: 200},
	})
	for _, path := range []string{"/", "/designs/x", "/static/editor.js"} {
		r := ts.do("GET", path, "")
		if r.status != 401 || !strings.Contains(r.String(), "auth token") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("page %s without token: %d %s", path, r.status, r.header.Get("Content-Type"))
		}
		checkSecurityHeaders(t, "401 page", r.header)
	}
	if r := ts.do("GET", "/?token=wrong", ""); r.status != 401 {
		t.Errorf("page with a wrong ?token=: %d", r.status)
	}

	// ?token= on a page sets the cookie and redirects without it; the
	// browser then reaches pages and the API with the cookie alone.
	r := ts.do("GET", "/?token="+token+"&x=1", "")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/?x=1" {
		t.Fatalf("page with ?token=: %d, Location %q", r.status, r.header.Get("Location"))
	}
	sc := r.header.Get("Set-Cookie")
	for _, want := range []string{tokenCookie + "=" + token, "HttpOnly", "SameSite=Strict", "path=/"} {
		if !strings.Contains(strings.ToLower(sc), strings.ToLower(want)) {
			t.Errorf("Set-Cookie %q lacks %q", sc, want)
		}
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, err := browser.Get(ts.base + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `data-testid="designs-list"`) || res.Request.URL.RawQuery != "" {
		t.Errorf("following ?token=: %d at %s", res.StatusCode, res.Request.URL)
	}
	res, err = browser.Get(ts.base + "/api/designs")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("API with the cookie from ?token=: %d", res.StatusCode)
	}
}

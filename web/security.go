package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"mime"
	"net"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// tokenCookie carries the auth token of a browser that opened a page with
// ?token=.
const tokenCookie = "braid_token"

// setSecurityHeaders sets the headers every response carries.
func (s *Server) setSecurityHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentSecurityPolicy, s.csp(c))
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set("Cross-Origin-Opener-Policy", "same-origin")
	c.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// csp is the Content-Security-Policy: everything from the server itself;
// scripts only from files (no inline script, no eval); inline styles
// allowed, as the graph library (x6) sets style attributes and injects
// its stylesheet; images also as data: URLs (exported PNGs, icons);
// websockets to this same host.
func (s *Server) csp(c *fiber.Ctx) string {
	connect := "'self'"
	if host := c.Hostname(); host != "" && validHostHeader(host) {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
		"font-src 'self' data:; connect-src " + connect + "; object-src 'none'; base-uri 'none'; " +
		"form-action 'self'; frame-ancestors 'none'"
}

// validHostHeader reports whether a Host header is a plain host[:port],
// safe to repeat in a header.
func validHostHeader(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_') {
			return false
		}
	}
	return true
}

// security is the first middleware: headers, the host check, the token,
// and the cross-site rules for mutations.
func (s *Server) security(c *fiber.Ctx) error {
	s.setSecurityHeaders(c)
	c.Set(fiber.HeaderCacheControl, "no-store")
	if s.cfg.AuthToken == "" {
		// Only loopback (New refuses otherwise): the Host must be a
		// loopback name, or a page of another site could rebind its
		// own name to 127.0.0.1 and be same-origin with us.
		host, _, err := net.SplitHostPort(c.Hostname())
		if err != nil {
			host = c.Hostname()
		}
		if !isLoopbackName(host) {
			return errorf(fiber.StatusForbidden, "the Host header "+quoteHeader(c.Hostname())+" is not a loopback address; open the designer at http://"+s.addr+"/")
		}
	} else if redirected, err := s.authenticate(c); err != nil || redirected {
		return err
	}
	if isMutation(c.Method()) {
		if err := s.sameOrigin(c); err != nil {
			return err
		}
		// A body must be JSON; a request without one (DELETE, a bare
		// POST) may say nothing, as it carries nothing a form could.
		ctype := c.Get(fiber.HeaderContentType)
		if isAPI(c) && !isJSON(ctype) && (ctype != "" || len(c.Body()) > 0) {
			return errorf(fiber.StatusUnsupportedMediaType, "send the request body as application/json (got "+quoteHeader(c.Get(fiber.HeaderContentType))+")")
		}
	}
	return c.Next()
}

func isMutation(method string) bool {
	switch method {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return false
	}
	return true
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == fiber.MIMEApplicationJSON
}

// quoteHeader shows a header's value in a message, shortened.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "..."
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '?'
		}
		return r
	}, v) + `"`
}

// sameOrigin refuses a request the browser marks as cross-site, or whose
// Origin is not this server's (scheme, host and port of the request).
// Requests without either header (curl, Go clients) pass: they are not
// a browser acting for another site.
func (s *Server) sameOrigin(c *fiber.Ctx) error {
	switch site := c.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return errorf(fiber.StatusForbidden, "cross-site request refused (Sec-Fetch-Site: "+quoteHeader(site)+")")
	}
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || origin == "null" || u.Scheme != c.Protocol() || !strings.EqualFold(u.Host, c.Hostname()) {
		return errorf(fiber.StatusForbidden, "cross-site request refused (Origin "+quoteHeader(origin)+" is not "+c.Protocol()+"://"+c.Hostname()+")")
	}
	return nil
}

// authenticate checks the token: the Authorization header, the cookie,
// or, on a page request, ?token= (which sets the cookie and redirects to
// the page without it: redirected is then true and the request is
// answered).
func (s *Server) authenticate(c *fiber.Ctx) (redirected bool, err error) {
	if bearer, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer "); ok && s.tokenMatches(strings.TrimSpace(bearer)) {
		return false, nil
	}
	if s.tokenMatches(c.Cookies(tokenCookie)) {
		return false, nil
	}
	if q := c.Query("token"); q != "" && !isAPI(c) && (c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead) && s.tokenMatches(q) {
		c.Cookie(&fiber.Cookie{Name: tokenCookie, Value: s.cfg.AuthToken, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode})
		u := url.URL{Path: c.Path()}
		args := c.Context().QueryArgs()
		var rest url.Values
		args.VisitAll(func(k, v []byte) {
			if string(k) != "token" {
				if rest == nil {
					rest = url.Values{}
				}
				rest.Add(string(k), string(v))
			}
		})
		u.RawQuery = rest.Encode()
		return true, c.Redirect(u.String(), fiber.StatusSeeOther)
	}
	msg := "this server needs its auth token: send \"Authorization: Bearer <token>\", or open a page with ?token=<token>"
	return false, errorf(fiber.StatusUnauthorized, msg)
}

// tokenMatches compares in constant time (hashes, so that the length does
// not leak either).
func (s *Server) tokenMatches(got string) bool {
	if got == "" {
		return false
	}
	a := sha256.Sum256([]byte(got))
	b := sha256.Sum256([]byte(s.cfg.AuthToken))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

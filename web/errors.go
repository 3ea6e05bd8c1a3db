package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/templates"
)

// problem is a designer.Problem as the API shows it: every field present.
type problem struct {
	Node    string        `json:"node"`
	Kind    designer.Kind `json:"kind"`
	Param   string        `json:"param"`
	Message string        `json:"message"`
}

func problemsJSON(ps designer.Problems) []problem {
	out := make([]problem, len(ps))
	for i, p := range ps {
		out[i] = problem{Node: p.Node, Kind: p.Kind, Param: p.Param, Message: p.Message}
	}
	return out
}

// apiError is the body of every error answer of the API.
type apiError struct {
	Error    string    `json:"error"`
	Problems []problem `json:"problems"`
	// Line, Column and Path locate a JSON error in the request body
	// (Path: the field, e.g. "design.nodes[2].position.x"); Line alone
	// a describe() text's.
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Path   string `json:"path,omitempty"`
}

// httpError is an error with the status and body to answer it with.
type httpError struct {
	status int
	body   apiError
}

func (e *httpError) Error() string { return e.body.Error }

func errorf(status int, msg string) *httpError {
	return &httpError{status: status, body: apiError{Error: msg, Problems: []problem{}}}
}

// problemsError is the 422 answer to a design with problems.
func problemsError(msg string, ps designer.Problems) *httpError {
	return &httpError{status: fiber.StatusUnprocessableEntity, body: apiError{Error: msg, Problems: problemsJSON(ps)}}
}

// storeError turns a store's error into an answer: 404 for what is not
// there, 503 for a closed store, 500 otherwise.
func storeError(err error) error {
	var nf *designer.NotFoundError
	switch {
	case errors.As(err, &nf):
		return errorf(fiber.StatusNotFound, nf.Error())
	case errors.Is(err, designer.ErrClosed):
		return errorf(fiber.StatusServiceUnavailable, "the design store is closed")
	}
	return err
}

func isAPI(c *fiber.Ctx) bool {
	p := c.Path()
	return p == "/api" || strings.HasPrefix(p, "/api/")
}

// handleError is fiber's ErrorHandler: every error a handler or
// middleware returns, and fasthttp's own (a body over the limit), comes
// here. API requests get JSON, pages an HTML page.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	var he *httpError
	var fe *fiber.Error
	switch {
	case errors.As(err, &he):
		if he.status >= 500 {
			s.log.Error("web: request failed", "method", c.Method(), "path", c.Path(), "status", he.status, "err", he.body.Error)
		}
	case errors.As(err, &fe):
		msg := fe.Message
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			msg = "the request body is larger than the limit of " + sizeString(s.cfg.BodyLimit)
		case fiber.StatusNotFound:
			if isAPI(c) {
				msg = "no such API endpoint: " + c.Method() + " " + c.Path()
			} else {
				msg = "There is no page at " + c.Path() + "."
			}
		}
		he = errorf(fe.Code, msg)
	default:
		s.log.Error("web: request failed", "method", c.Method(), "path", c.Path(), "err", err)
		he = errorf(fiber.StatusInternalServerError, "internal error: "+err.Error())
	}
	// Errors raised by fasthttp itself (413) skip the middleware.
	s.setSecurityHeaders(c)
	if he.status == fiber.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="braid"`)
	}
	if he.status == fiber.StatusRequestEntityTooLarge {
		// The rest of the body was not read: the connection closes,
		// lingering so that the client reads this answer.
		c.Set(fiber.HeaderConnection, "close")
		if lc, ok := c.Context().Conn().(*lingerConn); ok {
			lc.lingerOnClose()
		}
	}
	if isAPI(c) {
		return c.Status(he.status).JSON(he.body)
	}
	return s.render(c, he.status, templates.ErrorPage(templates.ErrorData{
		Status: he.status, Title: http.StatusText(he.status), Message: he.body.Error,
	}))
}

// sizeString shows a byte count in KiB or MiB when it is a whole number of
// them.
func sizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return itoa(n>>10) + " KiB"
	}
	return itoa(n) + " bytes"
}

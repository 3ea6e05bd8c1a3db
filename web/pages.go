package web

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/static"
	"github.com/braidstream/braid/templates"
)

// render writes a templ component as the HTML answer with status.
func (s *Server) render(c *fiber.Ctx, status int, page templ.Component) error {
	var buf bytes.Buffer
	if err := page.Render(c.UserContext(), &buf); err != nil {
		return fmt.Errorf("rendering %s: %w", c.Path(), err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

func (s *Server) designsPage(c *fiber.Ctx) error {
	list, err := s.store.List()
	if err != nil {
		return storeError(err)
	}
	sortSummaries(list)
	rows := make([]templates.DesignRow, len(list))
	for i, d := range list {
		rows[i] = templates.DesignRow{ID: d.ID, Name: d.Name, Revisions: d.Revisions, Created: d.Created, Updated: d.Updated}
	}
	return s.render(c, fiber.StatusOK, templates.DesignsPage(templates.DesignsData{Designs: rows}))
}

func (s *Server) editorPage(c *fiber.Ctx) error {
	id := c.Params("id")
	d, r, err := s.store.Get(id)
	var nf *designer.NotFoundError
	if errors.As(err, &nf) {
		return s.render(c, fiber.StatusNotFound, templates.ErrorPage(templates.ErrorData{
			Status: fiber.StatusNotFound, Title: "Design not found",
			Message: fmt.Sprintf("There is no design %q. It may have been deleted.", id),
		}))
	}
	if err != nil {
		return storeError(err)
	}
	return s.render(c, fiber.StatusOK, templates.EditorPage(templates.EditorData{DesignID: d.ID, DesignName: d.Name, Revision: r.Number}))
}

// staticFile serves a file of package static. A request whose ?v= is the
// file's version may be cached for good; others are revalidated by ETag.
func (s *Server) staticFile(c *fiber.Ctx) error {
	name := c.Params("*")
	if name == "" || strings.Contains(name, "\\") || !fs.ValidPath(name) || !static.Has(name) {
		return fiber.ErrNotFound
	}
	data, err := fs.ReadFile(static.FS(), name)
	if err != nil {
		return fiber.ErrNotFound
	}
	version := static.Version(name)
	etag := `"` + version + `"`
	c.Set(fiber.HeaderETag, etag)
	if c.Query("v") == version {
		c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		c.Set(fiber.HeaderCacheControl, "no-cache")
	}
	if c.Get(fiber.HeaderIfNoneMatch) == etag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js", ".mjs":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".map", ".json":
		ctype = fiber.MIMEApplicationJSONCharsetUTF8
	case ".txt", ".md":
		ctype = fiber.MIMETextPlainCharsetUTF8
	}
	if ctype == "" {
		ctype = fiber.MIMEOctetStream
	}
	c.Set(fiber.HeaderContentType, ctype)
	return c.Send(data)
}

// recoverPanic turns a handler's panic into a 500 answer.
func (s *Server) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("web: handler panicked", "method", c.Method(), "path", c.Path(), "panic", r, "stack", string(debug.Stack()))
			err = errorf(fiber.StatusInternalServerError, fmt.Sprintf("internal error: %v", r))
		}
	}()
	return c.Next()
}

// logRequest logs each request at debug level.
func (s *Server) logRequest(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	var he *httpError
	if errors.As(err, &he) {
		status = he.status
	}
	s.log.Debug("web: request", "method", c.Method(), "path", c.Path(), "status", status, "took", time.Since(start))
	return err
}

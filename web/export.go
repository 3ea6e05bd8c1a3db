package web

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
)

// goSource answers with an exported Go program as the attachment main.go.
func goSource(c *fiber.Ctx, d *designer.Design, opts compiler.ExportOptions) error {
	src, err := compiler.ExportGo(d, opts)
	var ps designer.Problems
	if errors.As(err, &ps) {
		return problemsError(problemCount(ps)+" in the design", ps)
	}
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/x-go; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename=main.go`)
	return c.Send(src)
}

// exportGo answers POST /api/export/go: the design in the body as a Go
// program.
func (s *Server) exportGo(c *fiber.Ctx) error {
	d, err := decodeDesign(c, nil, "", false)
	if err != nil {
		return err
	}
	return goSource(c, d, compiler.ExportOptions{})
}

// exportStoredGo answers GET /api/designs/:id/export.go[?revision=n]: a
// stored revision as a Go program whose header names the revision.
func (s *Server) exportStoredGo(c *fiber.Ctx) error {
	rev := 0
	if v := c.Query("revision"); v != "" {
		var err error
		if rev, err = revisionParam(v); err != nil {
			return err
		}
	}
	d, r, err := s.store.GetRevision(c.Params("id"), rev)
	if err != nil {
		return storeError(err)
	}
	return goSource(c, d, compiler.ExportOptions{Revision: r.Number})
}

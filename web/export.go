package web

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
)

// exportFormat is what an export answers with: one file, or a module.
type exportFormat int

const (
	// exportFile is the program alone, main.go.
	exportFile exportFormat = iota
	// exportModule is compiler.ExportModule as a zip: a Go module that
	// builds anywhere.
	exportModule
)

// goSource answers with an exported Go program: the attachment main.go,
// or the attachment <module>.zip holding the module.
func goSource(c *fiber.Ctx, d *designer.Design, opts compiler.ExportOptions, format exportFormat) error {
	var (
		src    []byte
		module *compiler.Module
		err    error
	)
	if format == exportModule {
		module, err = compiler.ExportModule(d, opts)
	} else {
		src, err = compiler.ExportGo(d, opts)
	}
	var ps designer.Problems
	if errors.As(err, &ps) {
		return problemsError(problemCount(ps)+" in the design", ps)
	}
	if err != nil {
		return err
	}
	if module == nil {
		c.Set(fiber.HeaderContentType, "text/x-go; charset=utf-8")
		c.Set(fiber.HeaderContentDisposition, `attachment; filename=main.go`)
		return c.Send(src)
	}
	var zip bytes.Buffer
	if err := module.WriteZip(&zip); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "application/zip")
	// moduleName keeps to [a-z0-9._-]: nothing to quote.
	c.Set(fiber.HeaderContentDisposition, fmt.Sprintf(`attachment; filename=%s.zip`, module.Name))
	return c.Send(zip.Bytes())
}

// exportGo answers POST /api/export/go and POST /api/export/module: the
// design in the body as a Go program, or as a module.
func (s *Server) exportGo(format exportFormat) fiber.Handler {
	return func(c *fiber.Ctx) error {
		d, err := decodeDesign(c, nil, "", false)
		if err != nil {
			return err
		}
		return goSource(c, d, compiler.ExportOptions{}, format)
	}
}

// exportStoredGo answers GET /api/designs/:id/export.go[?revision=n] and
// export.zip: a stored revision as a Go program (or module) whose header
// names the revision.
func (s *Server) exportStoredGo(format exportFormat) fiber.Handler {
	return func(c *fiber.Ctx) error {
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
		return goSource(c, d, compiler.ExportOptions{Revision: r.Number}, format)
	}
}

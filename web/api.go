package web

import (
	"encoding/json"
	"errors"
	"mime"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
)

// routes registers the pages, the static files and the API.
func (s *Server) routes() {
	app := s.app
	app.Use(s.recoverPanic, s.logRequest, s.security)

	app.Get("/", s.designsPage)
	app.Get("/designs/:id", s.editorPage)
	app.Get("/static/*", s.staticFile)

	api := app.Group("/api")
	api.Get("/catalog", s.catalog)
	api.Get("/designs", s.listDesigns)
	api.Post("/designs", s.createDesign)
	api.Post("/designs/import", s.importDesign)
	api.Get("/designs/:id", s.getDesign)
	api.Put("/designs/:id", s.saveDesign)
	api.Delete("/designs/:id", s.deleteDesign)
	api.Post("/designs/:id/rename", s.renameDesign)
	api.Get("/designs/:id/revisions", s.listRevisions)
	api.Get("/designs/:id/revisions/:rev", s.getRevision)
	api.Get("/designs/:id/export.json", s.exportDesign)
	api.Get("/designs/:id/export.go", s.exportStoredGo(exportFile))
	api.Get("/designs/:id/export.zip", s.exportStoredGo(exportModule))
	api.Post("/validate", s.validate)
	api.Post("/expression", s.expression)
	api.Post("/compile", s.compile)
	api.Post("/preview", s.preview)
	api.Post("/import/describe", s.importDescribe)
	api.Post("/export/go", s.exportGo(exportFile))
	api.Post("/export/module", s.exportGo(exportModule))
	s.liveRoutes()
}

// roles are the expression roles of designer.ExprRole.
var roles = []designer.ExprRole{
	designer.Predicate, designer.KeyMapper, designer.ValueMapper, designer.FlatMapper, designer.ValuesMapper,
	designer.Initializer, designer.Aggregator, designer.Reducer, designer.SessionMerger, designer.TimestampExtractor, designer.Joiner,
}

func (s *Server) catalog(c *fiber.Ctx) error {
	vars := make(map[designer.ExprRole][]string, len(roles))
	for _, r := range roles {
		vars[r] = compiler.RoleVariables(r)
	}
	return c.JSON(fiber.Map{
		"kinds":  designer.Catalog(),
		"groups": designer.Groups,
		"serdes": designer.Serdes,
		"roles":  vars,
		"limits": fiber.Map{"nodes": designer.MaxNodes, "edges": designer.MaxEdges},
	})
}

// designAnswer is a design with the revision it is.
type designAnswer struct {
	Design   *designer.Design  `json:"design"`
	Revision designer.Revision `json:"revision"`
}

type revisionAnswer struct {
	Revision designer.Revision `json:"revision"`
}

func (s *Server) listDesigns(c *fiber.Ctx) error {
	list, err := s.store.List()
	if err != nil {
		return storeError(err)
	}
	sortSummaries(list)
	return c.JSON(list)
}

// sortSummaries orders designs most recently updated first, then by name
// and id.
func sortSummaries(list []designer.Summary) {
	slices.SortStableFunc(list, func(a, b designer.Summary) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// untitled names a design created without a name.
const untitled = "untitled"

func (s *Server) createDesign(c *fiber.Ctx) error {
	var d *designer.Design
	if body := strings.TrimSpace(string(c.Body())); body == "" {
		d = &designer.Design{}
	} else {
		var err error
		if d, err = decodeDesign(c, nil, "", false); err != nil {
			return err
		}
	}
	d.ID = ""
	if strings.TrimSpace(d.Name) == "" {
		d.Name = untitled
	} else if why := designer.ValidDesignName(d.Name); why != "" {
		return errorf(fiber.StatusBadRequest, `request body: "name" `+why)
	}
	if d.Nodes == nil {
		d.Nodes = []designer.Node{}
	}
	if d.Edges == nil {
		d.Edges = []designer.Edge{}
	}
	r, err := s.store.Save(d, "created")
	if err != nil {
		return storeError(err)
	}
	return c.Status(fiber.StatusCreated).JSON(designAnswer{d, r})
}

func (s *Server) importDesign(c *fiber.Ctx) error {
	// Decode first, for an answer with the body's positions.
	if _, err := decodeDesign(c, nil, "", true); err != nil {
		return err
	}
	d, r, err := s.store.Import(c.Body())
	if err != nil {
		return storeError(err)
	}
	return c.Status(fiber.StatusCreated).JSON(designAnswer{d, r})
}

func (s *Server) getDesign(c *fiber.Ctx) error {
	d, r, err := s.store.Get(c.Params("id"))
	if err != nil {
		return storeError(err)
	}
	return c.JSON(designAnswer{d, r})
}

// saveRequest is the body of PUT /api/designs/:id.
type saveRequest struct {
	Design  json.RawMessage `json:"design"`
	Message string          `json:"message"`
	// BaseRevision, when set, is the revision the design was edited
	// from: the save is refused (409) if another has been saved since.
	BaseRevision int `json:"baseRevision"`
}

func (s *Server) saveDesign(c *fiber.Ctx) error {
	id := c.Params("id")
	var req saveRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	d, err := decodeDesign(c, req.Design, "design", false)
	if err != nil {
		return err
	}
	if d.ID == "" {
		d.ID = id
	}
	if d.ID != id {
		return errorf(fiber.StatusBadRequest, "the design's id "+strconv.Quote(d.ID)+" is not "+strconv.Quote(id)+", the one in the address")
	}
	s.saving.Lock()
	defer s.saving.Unlock()
	_, latest, err := s.store.Get(id)
	if err != nil {
		return storeError(err)
	}
	if req.BaseRevision > 0 && req.BaseRevision != latest.Number {
		return errorf(fiber.StatusConflict, "revision "+itoa(latest.Number)+" was saved after revision "+itoa(req.BaseRevision)+", which this design was edited from")
	}
	r, err := s.store.Save(d, req.Message)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(revisionAnswer{r})
}

func (s *Server) deleteDesign(c *fiber.Ctx) error {
	s.saving.Lock()
	defer s.saving.Unlock()
	if err := s.store.Delete(c.Params("id")); err != nil {
		return storeError(err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (s *Server) renameDesign(c *fiber.Ctx) error {
	var req struct {
		Name *string `json:"name"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return errorf(fiber.StatusBadRequest, `request body: "name" is required and must not be blank`)
	}
	if why := designer.ValidDesignName(*req.Name); why != "" {
		return errorf(fiber.StatusBadRequest, `request body: "name" `+why)
	}
	s.saving.Lock()
	defer s.saving.Unlock()
	r, err := s.store.Rename(c.Params("id"), *req.Name)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(revisionAnswer{r})
}

func (s *Server) listRevisions(c *fiber.Ctx) error {
	revs, err := s.store.Revisions(c.Params("id"))
	if err != nil {
		return storeError(err)
	}
	return c.JSON(revs)
}

// revisionParam reads a revision number: a whole number from 1.
func revisionParam(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errorf(fiber.StatusBadRequest, "revision "+strconv.Quote(v)+" is not a number from 1")
	}
	return n, nil
}

func (s *Server) getRevision(c *fiber.Ctx) error {
	rev, err := revisionParam(c.Params("rev"))
	if err != nil {
		return err
	}
	d, r, err := s.store.GetRevision(c.Params("id"), rev)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(designAnswer{d, r})
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// attachment sets Content-Disposition for a download named after a
// design: its name with anything but letters, digits, '.', '_' and '-'
// replaced, or else its id.
func attachment(c *fiber.Ctx, d *designer.Design, ext string) {
	base := strings.Trim(unsafeFileChars.ReplaceAllString(d.Name, "-"), "-.")
	if base == "" {
		base = d.ID
	}
	c.Set(fiber.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": base + ext}))
}

func (s *Server) exportDesign(c *fiber.Ctx) error {
	rev := 0
	if v := c.Query("revision"); v != "" {
		var err error
		if rev, err = revisionParam(v); err != nil {
			return err
		}
	}
	id := c.Params("id")
	data, err := s.store.Export(id, rev)
	if err != nil {
		return storeError(err)
	}
	d, err := designer.Decode(data)
	if err != nil {
		return err
	}
	attachment(c, d, ".json")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(data)
}

// validate answers with every problem Compile finds, 200 either way: the
// problems are the answer.
func (s *Server) validate(c *fiber.Ctx) error {
	d, err := decodeDesign(c, nil, "", false)
	if err != nil {
		return err
	}
	_, err = compiler.Compile(d, compiler.Options{})
	var ps designer.Problems
	switch {
	case err == nil:
	case errors.As(err, &ps):
	default:
		return err
	}
	return c.JSON(fiber.Map{"problems": problemsJSON(ps)})
}

func (s *Server) expression(c *fiber.Ctx) error {
	var req struct {
		Role   *designer.ExprRole `json:"role"`
		Source *string            `json:"source"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.Role == nil || req.Source == nil {
		return errorf(fiber.StatusBadRequest, `request body: "role" and "source" are required`)
	}
	if compiler.RoleVariables(*req.Role) == nil {
		return errorf(fiber.StatusBadRequest, "unknown expression role "+strconv.Quote(string(*req.Role)))
	}
	_, err := compiler.CompileExpr(*req.Role, *req.Source)
	if err == nil {
		return c.JSON(fiber.Map{"ok": true})
	}
	var ee *compiler.ExprError
	if !errors.As(err, &ee) {
		return err
	}
	if ee.OverLimit {
		// Refused unparsed: the request, not the expression's syntax, is
		// what is wrong.
		return errorf(fiber.StatusUnprocessableEntity, "expression: "+ee.Error())
	}
	return c.JSON(fiber.Map{"ok": false, "error": fiber.Map{"line": ee.Line, "column": ee.Column, "message": ee.Message}})
}

// compileDesign compiles d, a design with problems being a 422 answer.
func compileDesign(d *designer.Design) (*compiler.Compiled, error) {
	compiled, err := compiler.Compile(d, compiler.Options{})
	var ps designer.Problems
	if errors.As(err, &ps) {
		return nil, problemsError(problemCount(ps)+" in the design", ps)
	}
	return compiled, err
}

func problemCount(ps designer.Problems) string {
	if len(ps) == 1 {
		return "1 problem"
	}
	return itoa(len(ps)) + " problems"
}

func (s *Server) compile(c *fiber.Ctx) error {
	d, err := decodeDesign(c, nil, "", false)
	if err != nil {
		return err
	}
	compiled, err := compileDesign(d)
	if err != nil {
		return err
	}
	// The application id the deployment of this design runs with, unless
	// the request names another.
	appID := c.Query("appId")
	if appID == "" {
		appID = designer.ApplicationID(d)
	}
	return c.JSON(compileAnswerOf(compiled, appID))
}

// maxPartitions bounds a preview topic's partitions.
const maxPartitions = 256

func (s *Server) preview(c *fiber.Ctx) error {
	var req struct {
		Design     json.RawMessage   `json:"design"`
		Samples    []compiler.Sample `json:"samples"`
		Partitions map[string]int    `json:"partitions"`
		MaxRecords int               `json:"maxRecords"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	d, err := decodeDesign(c, req.Design, "design", false)
	if err != nil {
		return err
	}
	for topic, n := range req.Partitions {
		if n < 1 || n > maxPartitions {
			return errorf(fiber.StatusBadRequest, "partitions of topic "+strconv.Quote(topic)+": "+itoa(n)+" is not a number from 1 to "+itoa(maxPartitions))
		}
	}
	if req.MaxRecords < 0 {
		return errorf(fiber.StatusBadRequest, "maxRecords must not be negative")
	}
	if req.Samples == nil {
		req.Samples = []compiler.Sample{}
	}
	p, err := compiler.RunPreview(d, req.Samples, compiler.PreviewOptions{Partitions: req.Partitions, MaxRecords: req.MaxRecords})
	var ps designer.Problems
	if errors.As(err, &ps) {
		return problemsError(problemCount(ps)+" in the design", ps)
	}
	if err != nil {
		return err
	}
	return c.JSON(p)
}

var describeLine = regexp.MustCompile(`^line (\d+): `)

func (s *Server) importDescribe(c *fiber.Ctx) error {
	var req struct {
		Text *string `json:"text"`
		Name string  `json:"name"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.Text == nil {
		return errorf(fiber.StatusBadRequest, `request body: "text" is required`)
	}
	d, notes, err := compiler.ImportDescribeNotes(*req.Text, req.Name)
	if err != nil {
		e := errorf(fiber.StatusBadRequest, "describe() text: "+err.Error())
		if m := describeLine.FindStringSubmatch(err.Error()); m != nil {
			e.body.Line, _ = strconv.Atoi(m[1])
		}
		return e
	}
	if notes == nil {
		notes = []compiler.ImportNote{}
	}
	return c.JSON(fiber.Map{"design": d, "notes": notes})
}

package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/braidstream/braid/designer"
)

func itoa(n int) string { return strconv.Itoa(n) }

// lineColumn turns a byte offset of data into a 1-based line and column,
// the column counting characters (as designer.DecodeError does).
func lineColumn(data []byte, offset int) (line, col int) {
	offset = max(0, min(offset, len(data)))
	before := data[:offset]
	line = 1 + bytes.Count(before, []byte{'\n'})
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + utf8.RuneCount(before[start:])
}

// badJSON is the 400 answer to a body that is not the JSON an endpoint
// reads, at offset of the body (-1: unknown).
func badJSON(body []byte, offset int, path, msg string) *httpError {
	e := errorf(fiber.StatusBadRequest, "request body")
	if offset >= 0 {
		e.body.Line, e.body.Column = lineColumn(body, offset)
		e.body.Error += fmt.Sprintf(", line %d, column %d", e.body.Line, e.body.Column)
	}
	if path != "" {
		e.body.Path = path
		e.body.Error += ", " + path
	}
	e.body.Error += ": " + msg
	return e
}

// decodeBody decodes the request body into v strictly: one JSON value,
// no unknown fields. Errors are 400 answers with the position.
func decodeBody(c *fiber.Ctx, v any) error {
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return errorf(fiber.StatusBadRequest, "request body: empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, err := dec.Token(); err != io.EOF {
			return badJSON(body, int(dec.InputOffset()), "", "data after the JSON value")
		}
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badJSON(body, int(se.Offset)-1, "", se.Error())
	case errors.As(err, &te):
		want := "another type"
		if te.Type != nil {
			want = te.Type.String()
		}
		return badJSON(body, int(te.Offset)-1, te.Field, fmt.Sprintf("want %s, not %s", want, te.Value))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badJSON(body, len(body), "", "unexpected end of JSON input")
	}
	return badJSON(body, -1, "", err.Error())
}

// fieldOffset returns the byte offset in body, a JSON object, where the
// value of its top-level field name starts; -1 when it is not there.
func fieldOffset(body []byte, name string) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return -1
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return -1
		}
		off := int(dec.InputOffset())
		for off < len(body) && (body[off] == ' ' || body[off] == '\t' || body[off] == '\n' || body[off] == '\r' || body[off] == ':') {
			off++
		}
		if t == name {
			return off
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return -1
		}
	}
	return -1
}

// decodeDesign decodes a design: all of the body (field "") or its
// top-level field. A *designer.DecodeError becomes a 400 answer whose
// line, column and path are the body's. Unless strict, a design object
// without a version is taken to be of the current one (the editor's
// drafts); files being imported are strict. A design over the designer's
// size limits (designer.CheckSize) is a 400 answer with that problem.
func decodeDesign(c *fiber.Ctx, raw json.RawMessage, field string, strict bool) (*designer.Design, error) {
	body := c.Body()
	if field == "" {
		raw = body
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		what := "the request body"
		if field != "" {
			what = "field " + strconv.Quote(field)
		}
		return nil, errorf(fiber.StatusBadRequest, what+" must hold a design")
	}
	if !strict {
		raw = withVersion(raw)
	}
	d, err := designer.Decode(raw)
	if err == nil {
		if p := designer.CheckSize(d); p != nil {
			e := errorf(fiber.StatusBadRequest, p.Message)
			e.body.Problems = problemsJSON(designer.Problems{*p})
			return nil, e
		}
		return d, nil
	}
	var de *designer.DecodeError
	if !errors.As(err, &de) {
		return nil, errorf(fiber.StatusBadRequest, err.Error())
	}
	start, path := 0, de.Path
	if field != "" {
		start = fieldOffset(body, field)
		if path == "" {
			path = field
		} else {
			path = field + "." + path
		}
	}
	e := errorf(fiber.StatusBadRequest, "")
	e.body.Path = path
	msg := "design JSON"
	if de.Line > 0 && start >= 0 {
		line, col := lineColumn(body, start)
		e.body.Line = line + de.Line - 1
		e.body.Column = de.Column
		if de.Line == 1 {
			e.body.Column += col - 1
		}
		msg += fmt.Sprintf(", line %d, column %d", e.body.Line, e.body.Column)
	}
	if path != "" {
		msg += ", " + path
	}
	e.body.Error = msg + ": " + de.Msg
	return nil, e
}

// withVersion adds "version": designer.FormatVersion to a JSON object
// that has no version field, at its end (so that positions of errors in it
// stay right). Anything else is returned as it is.
func withVersion(raw []byte) []byte {
	trimmed := bytes.TrimRight(raw, " \t\r\n")
	if !json.Valid(raw) || len(trimmed) == 0 || trimmed[len(trimmed)-1] != '}' {
		return raw
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return raw
	}
	if _, ok := fields["version"]; ok {
		return raw
	}
	version := `"version":` + strconv.Itoa(designer.FormatVersion)
	if len(fields) > 0 {
		version = "," + version
	}
	out := make([]byte, 0, len(raw)+len(version))
	out = append(out, trimmed[:len(trimmed)-1]...)
	out = append(out, version...)
	return append(out, '}')
}

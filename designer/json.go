package designer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeError is why Decode refused its input, with where: Line and Column
// (1-based, counting characters; 0 when unknown) and Path, the field the
// error is about, e.g. "nodes[3].position.x" ("" for the document itself
// or a syntax error).
type DecodeError struct {
	Line   int
	Column int
	Path   string
	Msg    string
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("design JSON")
	if e.Line > 0 {
		fmt.Fprintf(&b, ", line %d, column %d", e.Line, e.Column)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, ", %s", e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Decode parses the JSON form of a design, strictly: fields this package
// does not know (spelled exactly, case included) and fields given twice
// are refused, and so is a version other than FormatVersion. Errors are
// *DecodeError, with the line and column of the trouble and, for a value
// of the wrong type or an unknown field, its path.
//
// Parameter values are kept as JSON gives them, numbers as json.Number
// (so that 6 and 6.5 stay apart); read them with ParamInt and friends. A
// design without nodes or edges gets empty, non-nil slices; a node
// without parameters a nil Params.
func Decode(data []byte) (*Design, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			pos := int(se.Offset) - 1
			if pos < 0 || strings.Contains(se.Error(), "unexpected end") {
				pos = int(se.Offset)
			}
			line, col := lineColumn(data, pos)
			return nil, &DecodeError{Line: line, Column: col, Msg: se.Error()}
		}
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, &DecodeError{Msg: err.Error()}
	}

	w := walker{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	w.dec.UseNumber()
	w.walk(designSchema, "", 0)
	if w.err != nil {
		return nil, w.err
	}
	if err := w.checkVersion(); err != nil {
		return nil, err
	}

	var d Design
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, w.typeError(te)
		}
		return nil, &DecodeError{Msg: err.Error()}
	}
	if d.Nodes == nil {
		d.Nodes = []Node{}
	}
	if d.Edges == nil {
		d.Edges = []Edge{}
	}
	for i := range d.Nodes {
		if len(d.Nodes[i].Params) == 0 {
			d.Nodes[i].Params = nil
		}
	}
	return &d, nil
}

// Encode writes the JSON form of d: indented by two spaces, parameters
// sorted by name, version FormatVersion whatever d.Version says, and
// without HTML escaping (expressions keep their < and >). It ends with a
// newline.
func Encode(d *Design) ([]byte, error) {
	if d == nil {
		return nil, errors.New("designer: Encode of a nil design")
	}
	c := *d
	c.Version = FormatVersion
	if c.Nodes == nil {
		c.Nodes = []Node{}
	}
	if c.Edges == nil {
		c.Edges = []Edge{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("designer: encode design %q: %w", d.ID, err)
	}
	return buf.Bytes(), nil
}

// lineColumn turns a byte offset into a 1-based line and column, the
// column counting characters.
func lineColumn(data []byte, offset int) (line, col int) {
	if offset > len(data) {
		offset = len(data)
	}
	if offset < 0 {
		offset = 0
	}
	before := data[:offset]
	line = 1 + bytes.Count(before, []byte{'\n'})
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + utf8.RuneCount(before[lineStart:])
}

// schema describes which object fields a part of the document may have.
// A nil *schema takes anything (scalars, and the contents of params).
type schema struct {
	fields map[string]*schema // an object with these fields
	elem   *schema            // a list of these
}

var (
	designSchema = &schema{fields: map[string]*schema{
		"id": nil, "name": nil, "version": nil,
		"nodes": {elem: &schema{fields: map[string]*schema{
			"id": nil, "kind": nil, "name": nil, "params": nil,
			"position": {fields: map[string]*schema{"x": nil, "y": nil}},
		}}},
		"edges": {elem: &schema{fields: map[string]*schema{
			"from": nil, "fromPort": nil, "to": nil, "toPort": nil,
		}}},
	}}
)

// span is where a value sits in the document.
type span struct {
	path       string
	start, end int // byte offsets, end exclusive
	depth      int
}

// walker reads a syntactically valid document token by token, checking
// field names against a schema and recording where each value is, so that
// errors from encoding/json, which know an offset and a path without list
// indexes, can say which field of which node they are about.
type walker struct {
	data  []byte
	dec   *json.Decoder
	spans []span
	err   *DecodeError
	// version is the top-level version value, if present.
	version    any
	versionSet bool
	versionAt  int
}

// valueStart returns where the next value begins: after the previous
// token, past whitespace and the separators the decoder has not consumed.
func (w *walker) valueStart() int {
	i := int(w.dec.InputOffset())
	for i < len(w.data) {
		switch w.data[i] {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
			continue
		}
		break
	}
	return i
}

func (w *walker) fail(at int, path, format string, args ...any) {
	if w.err != nil {
		return
	}
	line, col := lineColumn(w.data, at)
	w.err = &DecodeError{Line: line, Column: col, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// maxDepth is how deeply a design's JSON may nest (a design itself needs
// 4 levels, a branches parameter 6); it keeps an import of a small
// file from encoding to an indented monster.
const maxDepth = 64

// walk reads one value at path. It stops early once an error is recorded.
func (w *walker) walk(s *schema, path string, depth int) {
	start := w.valueStart()
	if depth > maxDepth {
		w.fail(start, path, "nested more than %d levels deep", maxDepth)
		return
	}
	tok, err := w.dec.Token()
	if err != nil {
		w.fail(start, path, "%v", err)
		return
	}
	if depth == 1 && path == "version" {
		w.version = tok
	}
	if depth == 0 {
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			w.fail(start, "", "a design is a JSON object, not %s", jsonKind(tok))
			return
		}
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for w.dec.More() {
			keyAt := w.valueStart()
			kt, err := w.dec.Token()
			if err != nil {
				w.fail(keyAt, path, "%v", err)
				return
			}
			key, _ := kt.(string)
			child := joinPath(path, key)
			if seen[key] {
				w.fail(keyAt, child, "field %q given twice", key)
				return
			}
			seen[key] = true
			var cs *schema
			if s != nil && s.fields != nil {
				var known bool
				cs, known = s.fields[key]
				if !known {
					w.fail(keyAt, child, "unknown field %q", key)
					return
				}
			}
			if depth == 0 && key == "version" {
				w.versionSet = true
				w.versionAt = w.valueStart()
			}
			w.walk(cs, child, depth+1)
			if w.err != nil {
				return
			}
		}
		if _, err := w.dec.Token(); err != nil {
			w.fail(int(w.dec.InputOffset()), path, "%v", err)
			return
		}
	case json.Delim('['):
		var es *schema
		if s != nil {
			es = s.elem
		}
		for i := 0; w.dec.More(); i++ {
			w.walk(es, path+"["+strconv.Itoa(i)+"]", depth+1)
			if w.err != nil {
				return
			}
		}
		if _, err := w.dec.Token(); err != nil {
			w.fail(int(w.dec.InputOffset()), path, "%v", err)
			return
		}
	}
	w.spans = append(w.spans, span{path: path, start: start, end: int(w.dec.InputOffset()), depth: depth})
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonKind names the kind of JSON value a token starts.
func jsonKind(tok any) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "a list"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// checkVersion refuses a missing version or one other than FormatVersion.
func (w *walker) checkVersion() error {
	if !w.versionSet {
		return &DecodeError{Path: "version", Msg: fmt.Sprintf("version is missing; this Braid reads version %d (FormatVersion)", FormatVersion)}
	}
	if n, ok := w.version.(json.Number); ok {
		if v, err := n.Int64(); err == nil && v == FormatVersion {
			return nil
		}
	}
	line, col := lineColumn(w.data, w.versionAt)
	msg := fmt.Sprintf("version must be a number, not %s; this Braid reads version %d (FormatVersion)", jsonKind(w.version), FormatVersion)
	if n, ok := w.version.(json.Number); ok {
		msg = fmt.Sprintf("version %s is not supported; this Braid reads version %d (FormatVersion)", n, FormatVersion)
	}
	return &DecodeError{Line: line, Column: col, Path: "version", Msg: msg}
}

// typeError turns encoding/json's complaint about a value of the wrong
// type into a DecodeError with the value's path (list indexes included)
// and position. encoding/json reports the offset just after a scalar, or
// just inside a list or object; the deepest value whose bytes contain
// that offset is the one.
func (w *walker) typeError(te *json.UnmarshalTypeError) error {
	off := int(te.Offset)
	best := -1
	for i, s := range w.spans {
		if s.start < off && off <= s.end && (best < 0 || s.depth > w.spans[best].depth) {
			best = i
		}
	}
	msg := fmt.Sprintf("want %s, not %s", goKind(te.Type), jsonValue(te.Value))
	if strings.HasPrefix(te.Value, "number ") && (te.Type != nil && (te.Type.Kind() == reflect.Float64 || te.Type.Kind() == reflect.Float32)) {
		msg = fmt.Sprintf("%s is out of range", te.Value)
	}
	if best < 0 {
		return &DecodeError{Path: te.Field, Msg: msg}
	}
	s := w.spans[best]
	line, col := lineColumn(w.data, s.start)
	return &DecodeError{Line: line, Column: col, Path: s.path, Msg: msg}
}

// goKind says what JSON a Go type wants.
func goKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// jsonValue phrases encoding/json's description of a value ("string",
// "number 1.5", "array").
func jsonValue(v string) string {
	switch v {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "number":
		return "a number"
	}
	return v
}

// decodeStrict decodes one JSON value from data into v, refusing unknown
// fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the value")
	}
	return nil
}

// Package templates holds the HTML pages of the designer as templ
// components (*.templ, with the generated *_templ.go committed beside
// them): the designs list, the editor's shell and the error pages. The
// pages are shells: the scripts from package static fill them through the
// JSON API, finding their containers by data-testid (and the same id).
//
// The package knows nothing of designs or the API: the web package turns
// what it has into the plain structs below.
package templates

import "time"

// DesignRow is one design of the designs list.
type DesignRow struct {
	ID        string
	Name      string
	Revisions int
	Created   time.Time
	Updated   time.Time
}

// DesignsData is what the designs list shows.
type DesignsData struct {
	Designs []DesignRow
}

// EditorData is what the editor's shell needs: the design it edits.
type EditorData struct {
	DesignID   string
	DesignName string
	// Revision is the latest revision's number when the page was made.
	Revision int
}

// ErrorData is an error page: its status and what to tell.
type ErrorData struct {
	Status  int
	Title   string
	Message string
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// when formats a time for the designs list.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

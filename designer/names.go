package designer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxDesignNameLength is the longest design name, in characters.
const MaxDesignNameLength = 120

// ValidDesignName says why name cannot name a design, or "" when it can.
// A design's name is for people: words and spaces ("Big orders per
// customer"), 1 to MaxDesignNameLength characters, without control
// characters or blanks at either end, and with a letter or digit. Where a
// name must follow Kafka's topic-name rules, a fragment is derived from
// it (NameSlug), and the application id of a deployment comes from the
// design's id (ApplicationID). This is the one rule: validation, the
// API's create and rename and the editor's dialogs use it.
func ValidDesignName(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "must not be empty"
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case strings.TrimSpace(name) != name:
		return "must not start or end with a blank"
	case utf8.RuneCountInString(name) > MaxDesignNameLength:
		return fmt.Sprintf("is %d characters long; at most %d are allowed", utf8.RuneCountInString(name), MaxDesignNameLength)
	}
	letter := false
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Sprintf("holds the control character %q", r)
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			letter = true
		}
	}
	if !letter {
		return "must hold a letter or a digit"
	}
	return ""
}

// NameSlug derives from a design's name a fragment of Kafka topic names:
// lower-case ASCII letters, digits, '.', '_' and '-', every other run of
// characters one '-' ("Big orders per customer" is
// "big-orders-per-customer"). It is never empty ("design" when nothing is
// left) and at most 100 characters long, so that an application id made of
// it leaves room for the internal topics' suffixes.
func NameSlug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	s := strings.Trim(b.String(), "-.")
	if len(s) > 100 {
		s = strings.TrimRight(s[:100], "-.")
	}
	if s == "" {
		return "design"
	}
	return s
}

// ApplicationID is the Kafka Streams application id a design runs with
// when deployed: "braid-" and the design's id, or for a design without a
// valid id (not stored yet) its name's slug. Internal topics and the
// consumer group are named after it, so it follows the topic-name rules.
// The deployment and the compile view both take it from here.
func ApplicationID(d *Design) string {
	if d.ID != "" && ValidID(d.ID) {
		return "braid-" + d.ID
	}
	return "braid-" + NameSlug(d.Name)
}

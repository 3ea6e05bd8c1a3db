package designer

import (
	"strings"
	"testing"
)

func TestNameSlug(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"Big orders per customer", "big-orders-per-customer"},
		{"orders-demo", "orders-demo"},
		{"  Orders / Payments (v2) ", "orders-payments-v2"},
		{"Crème brûlée", "cr-me-br-l-e"},
		{"日本", "design"},
		{"", "design"},
		{strings.Repeat("ab ", 80), strings.Repeat("ab-", 33) + "a"},
	} {
		got := NameSlug(tc.name)
		if got != tc.want {
			t.Errorf("NameSlug(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if why := ValidTopicName(got); why != "" {
			t.Errorf("NameSlug(%q) = %q is no topic name: %s", tc.name, got, why)
		}
	}
}

// TestApplicationID: the application id of a deployment comes from the
// design's id, and from its name's slug when it has none; it is always a
// topic-name fragment, whatever the name.
func TestApplicationID(t *testing.T) {
	for _, tc := range []struct {
		d    Design
		want string
	}{
		{Design{ID: "orders-demo", Name: "orders-demo"}, "braid-orders-demo"},
		{Design{ID: "Xy_3-abc", Name: "Big orders per customer"}, "braid-Xy_3-abc"},
		{Design{Name: "Big orders per customer"}, "braid-big-orders-per-customer"},
		{Design{ID: "not valid/", Name: "Big orders"}, "braid-big-orders"},
	} {
		got := ApplicationID(&tc.d)
		if got != tc.want {
			t.Errorf("ApplicationID(%+v) = %q, want %q", tc.d, got, tc.want)
		}
		if why := ValidTopicName(got + "-store-changelog"); why != "" {
			t.Errorf("ApplicationID(%+v) = %q: %s", tc.d, got, why)
		}
	}
}

// TestValidDesignName: a name that validation accepts is accepted by
// ValidDesignName and the other way round (one rule).
func TestValidDesignName(t *testing.T) {
	for name, ok := range map[string]bool{
		"Big orders per customer":                true,
		"orders-demo":                            true,
		"Crème brûlée 2":                         true,
		"":                                       false,
		"   ":                                    false,
		" padded":                                false,
		"line\nbreak":                            false,
		"--":                                     false,
		strings.Repeat("x", MaxDesignNameLength): true,
		strings.Repeat("x", MaxDesignNameLength+1): false,
	} {
		if got := ValidDesignName(name) == ""; got != ok {
			t.Errorf("ValidDesignName(%q) = %q, want ok %v", name, ValidDesignName(name), ok)
		}
		d := &Design{Name: name, Version: 1}
		named := true
		for _, p := range Validate(d) {
			if p.Param == "name" && p.Node == "" {
				named = false
			}
		}
		if named != ok {
			t.Errorf("Validate of a design named %q: name accepted %v, want %v", name, named, ok)
		}
	}
}

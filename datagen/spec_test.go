package datagen

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want []string // the lines of the error, in order; nil: valid
	}{
		{"zero but topic", Spec{Topic: "orders"}, nil},
		{"full", Spec{Topic: "orders.v1_x-y", Rate: 1e6, Keys: 1, KeyPrefix: "c", Template: map[string]string{"a": "key"},
			Jitter: time.Second, LateFraction: 1, LateBy: 2 * time.Second, Seed: 3}, nil},
		{"no topic", Spec{}, []string{`datagen spec: Topic: required`}},
		{"bad topic", Spec{Topic: "a b"}, []string{`datagen spec "a b": Topic: "a b" has the character ' '; Kafka allows only letters, digits, '.', '_' and '-'`}},
		{"dot topic", Spec{Topic: ".."}, []string{`datagen spec "..": Topic: ".." is not a valid topic name`}},
		{"long topic", Spec{Topic: strings.Repeat("t", 250)}, []string{`datagen spec "` + strings.Repeat("t", 250) + `": Topic: 250 characters, above Kafka's 249`}},
		{"rate too high", Spec{Topic: "o", Rate: 2e6}, []string{`datagen spec "o": Rate 2e+06: must be > 0 and <= 1e6 records per second`}},
		{"rate NaN", Spec{Topic: "o", Rate: math.NaN()}, []string{`datagen spec "o": Rate NaN: must be > 0 and <= 1e6 records per second`}},
		{"late by not beyond jitter", Spec{Topic: "o", Jitter: 2 * time.Minute, LateFraction: 0.1},
			[]string{`datagen spec "o": LateBy 1m0s: must exceed Jitter 2m0s, or late records are no later than jittered ones`}},
		{"late by below jitter without late records", Spec{Topic: "o", Jitter: 2 * time.Minute}, nil},
		{"several at once", Spec{Topic: "orders", Rate: -1, Keys: -2, Jitter: -time.Second, LateFraction: 1.5, LateBy: -time.Minute,
			Template: map[string]string{"amount": "random(5, 1)", "tier": "choice()", "id": "sequence"}},
			[]string{
				`datagen spec "orders": Rate -1: must be > 0 and <= 1e6 records per second`,
				`datagen spec "orders": Keys -2: must be positive (0: the default 10)`,
				`datagen spec "orders": Jitter -1s: must not be negative`,
				`datagen spec "orders": LateFraction 1.5: must be between 0 and 1`,
				`datagen spec "orders": LateBy -1m0s: must not be negative`,
				`datagen spec "orders": Template field "amount": random(5, 1): min is above max`,
				`datagen spec "orders": Template field "tier": choice(): choice needs at least one option`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want\n%s", strings.Join(tc.want, "\n"))
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Validate =\n%s\nwant\n%s", err, strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	s, errs := Spec{Topic: "orders"}.compile()
	if errs != nil {
		t.Fatal(errs)
	}
	if s.Rate != 10 || s.Keys != 10 || s.KeyPrefix != "key" || s.LateBy != time.Minute || s.Jitter != 0 || s.LateFraction != 0 {
		t.Errorf("defaults: %+v", s.Spec)
	}
	if len(s.tmpl.fields) != 3 {
		t.Errorf("default template has %d fields, want 3", len(s.tmpl.fields))
	}
}

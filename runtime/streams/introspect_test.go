package streams_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
)

// TestOperatorSubtopologiesAgreeWithDescribe checks OperatorSubtopologies
// against what Describe prints, for every golden topology.
func TestOperatorSubtopologiesAgreeWithDescribe(t *testing.T) {
	for name, build := range describeCases {
		t.Run(name, func(t *testing.T) {
			b := streams.NewBuilder()
			build(b)
			topo, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{}
			current := -1
			for _, line := range strings.Split(topo.Describe(), "\n") {
				line = strings.TrimSpace(line)
				if rest, ok := strings.CutPrefix(line, "Sub-topology: "); ok {
					current, _ = strconv.Atoi(strings.Fields(rest)[0])
					continue
				}
				for _, prefix := range []string{"Source: ", "Processor: ", "Sink: "} {
					if rest, ok := strings.CutPrefix(line, prefix); ok {
						name, _, _ := strings.Cut(rest, " (")
						want[name] = current
					}
				}
			}
			got := topo.OperatorSubtopologies()
			if len(got) != len(want) {
				t.Errorf("%d operators, Describe shows %d", len(got), len(want))
			}
			for name, id := range want {
				if got[name] != id {
					t.Errorf("operator %s in sub-topology %d, Describe says %d", name, got[name], id)
				}
			}
		})
	}
}

//go:build linux

package main

import (
	"strings"
	"testing"
)

// The short-circuit row fails when under 95% of its probes were answered
// from eBPF (a tracker that did not load makes it a dial's row); the dial
// row and other kinds are not held to it.
func TestShortCircuitShortfalls(t *testing.T) {
	sc, dial := variants(kindTCP)[0], variants(kindTCP)[1]
	for _, tc := range []struct {
		name string
		rows []row
		want int
	}{
		{"all from eBPF", []row{{variant: sc, methodShare: 1}, {variant: dial, methodShare: 1}}, 0},
		{"at the bound", []row{{variant: sc, methodShare: 0.95}}, 0},
		{"tracker did not load", []row{{variant: sc, methodShare: 0}, {variant: dial, methodShare: 1}}, 1},
		{"some dialed", []row{{variant: sc, methodShare: 0.9}}, 1},
		{"no TCP runs counted", []row{{variant: sc, methodShare: -1}}, 1},
		{"other kinds", []row{{variant: variants(kindHTTP)[0], methodShare: -1}}, 0},
	} {
		got := shortCircuitShortfalls([]report{{n: 20, rows: tc.rows}})
		if len(got) != tc.want {
			t.Errorf("%s: %d shortfalls %q, want %d", tc.name, len(got), got, tc.want)
		}
		for _, g := range got {
			if !strings.Contains(g, "20 pods") || !strings.Contains(g, "from eBPF") {
				t.Errorf("%s: %q does not name the pod count and the share", tc.name, g)
			}
		}
	}
}

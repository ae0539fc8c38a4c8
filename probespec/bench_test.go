package probespec_test

import (
	"os"
	"testing"

	"github.com/probelet/probelet/probespec"
)

// BenchmarkParse measures one parse of the DESIGN.md example annotation
// (three probes), which the daemon does once per pod update.
func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"design-example", "yaml"} {
		value, err := os.ReadFile("testdata/parse/" + name + ".in")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, errs := probespec.Parse(web, string(value)); errs.Len() != 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}

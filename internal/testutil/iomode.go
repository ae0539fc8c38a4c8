package testutil

import (
	"testing"

	"github.com/probelet/probelet/quietio"
)

// EachIOMode runs f once in each I/O mode (--io), the process switched to
// it, and leaves the process in the default one. Not for parallel tests:
// the switch is process-wide.
func EachIOMode(t testing.TB, f func(mode string)) {
	t.Helper()
	t.Cleanup(func() { _ = quietio.Set(quietio.Quiet) })
	for _, mode := range []string{quietio.Quiet, quietio.Std} {
		if err := quietio.Set(mode); err != nil {
			t.Fatal(err)
		}
		f(mode)
	}
}

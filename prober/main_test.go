package prober_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/probelet/probelet/quietio"
)

// TestMain runs the suite in the I/O mode PROBELET_IO names (quiet by
// default): `make unit` runs it in both (--io).
func TestMain(m *testing.M) {
	if err := quietio.Set(os.Getenv("PROBELET_IO")); err != nil {
		fmt.Fprintln(os.Stderr, "PROBELET_IO:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

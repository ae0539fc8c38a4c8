package servertest

import (
	"path/filepath"
	"testing"

	"github.com/probelet/probelet/internal/testutil/golden"
)

// Golden compares got with testdata/<name> (golden.Check).
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

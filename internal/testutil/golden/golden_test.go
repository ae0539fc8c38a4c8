package golden_test

import (
	"path/filepath"
	"testing"

	"github.com/probelet/probelet/internal/testutil/golden"
)

func TestCheckAcceptsTheSameBytes(t *testing.T) {
	golden.Check(t, filepath.Join("testdata", "hello.golden"), []byte("hello\n"))
}

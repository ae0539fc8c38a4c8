package httpprobe

import (
	"testing"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/quietio"
)

// Under --io=std plain HTTP goes through net/http's Transport, as HTTPS
// always does.
func TestStdIOTakesNetHTTP(t *testing.T) {
	testutil.EachIOMode(t, func(mode string) {
		if direct := New().direct != nil; direct != (mode == quietio.Quiet) {
			t.Errorf("--io=%s: the direct exchange in use: %v", mode, direct)
		}
	})
}

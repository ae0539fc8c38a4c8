package httpprobe

import (
	"testing"

	"github.com/probelet/probelet/internal/quietio"
)

// Under --io=std plain HTTP goes through net/http's Transport, as HTTPS
// always does.
func TestStdIOTakesNetHTTP(t *testing.T) {
	t.Cleanup(func() { _ = quietio.Set(quietio.Quiet) })
	for _, mode := range []string{quietio.Quiet, quietio.Std} {
		_ = quietio.Set(mode)
		if direct := New().direct != nil; direct != (mode == quietio.Quiet) {
			t.Errorf("--io=%s: the direct exchange in use: %v", mode, direct)
		}
	}
}

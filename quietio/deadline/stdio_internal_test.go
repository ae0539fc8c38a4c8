package deadline

import (
	"context"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/quietio"
)

// Under --io=std a deadline is the standard library's, on a Go timer: the
// process's timer file holds nothing.
func TestStdIOTakesGoTimers(t *testing.T) {
	testutil.EachIOMode(t, func(mode string) {
		ctx, cancel := WithTimeout(context.Background(), time.Hour)
		defer cancel()
		w := theWheel()
		if w == nil {
			t.Skip("no timer file on this system")
		}
		w.mu.Lock()
		held := len(w.heap)
		w.mu.Unlock()
		if want := map[string]int{quietio.Quiet: 1, quietio.Std: 0}[mode]; held != want {
			t.Errorf("--io=%s: the timer file holds %d deadlines, want %d", mode, held, want)
		}
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < 59*time.Minute {
			t.Errorf("--io=%s: deadline %v, %v", mode, dl, ok)
		}
	})
}

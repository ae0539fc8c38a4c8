package retry_test

import (
	"testing"
	"time"

	"github.com/probelet/probelet/internal/retry"
)

func TestBackoffDoublesUpToTheCapWithJitter(t *testing.T) {
	b := retry.Backoff(100*time.Millisecond, time.Second)
	for i, base := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		base *= time.Millisecond
		got := b.Step()
		if hi := time.Duration(float64(base) * (1 + retry.Jitter)); got < base || got > hi {
			t.Fatalf("wait %d = %s, want within [%s, %s]", i+1, got, base, hi)
		}
	}
}

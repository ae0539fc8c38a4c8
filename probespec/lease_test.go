package probespec_test

import (
	"testing"
	"time"

	"github.com/probelet/probelet/probespec"
)

func TestCheckLeaseRenewInterval(t *testing.T) {
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{
		{probespec.LeaseRenewInterval, true}, {time.Second, true}, {5 * time.Minute, true},
		{999 * time.Millisecond, false}, {5*time.Minute + 1, false}, {0, false}, {-time.Second, false},
	} {
		if err := probespec.CheckLeaseRenewInterval(tc.d); (err == nil) != tc.ok {
			t.Errorf("CheckLeaseRenewInterval(%v) = %v, want ok %v", tc.d, err, tc.ok)
		}
	}
}

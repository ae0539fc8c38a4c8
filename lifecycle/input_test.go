package lifecycle_test

import (
	"testing"
	"time"

	"github.com/probelet/probelet/lifecycle"
)

func TestUnixNanos(t *testing.T) {
	tests := []struct {
		in   int64
		want time.Time
	}{
		{0, time.Time{}},
		{-1, time.Time{}},
		{1e18, time.Unix(1e9, 0)},
	}
	for _, tt := range tests {
		if got := lifecycle.UnixNanos(tt.in); !got.Equal(tt.want) || got.IsZero() != tt.want.IsZero() {
			t.Errorf("UnixNanos(%d) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestProcNetNS(t *testing.T) {
	tests := []struct {
		pid  uint32
		want string
	}{
		{0, ""},
		{4242, "/proc/4242/ns/net"},
	}
	for _, tt := range tests {
		if got := lifecycle.ProcNetNS(tt.pid); got != tt.want {
			t.Errorf("ProcNetNS(%d) = %q, want %q", tt.pid, got, tt.want)
		}
	}
}

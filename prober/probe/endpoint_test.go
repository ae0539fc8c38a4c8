package probe_test

import (
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe"
)

func TestCheckEndpoint(t *testing.T) {
	tests := []struct {
		name    string
		host    string
		port    int
		timeout time.Duration
		want    string
	}{
		{"valid", "10.0.0.1", 8080, time.Second, ""},
		{"lowest port", "h", 1, time.Second, ""},
		{"highest port", "h", 65535, time.Second, ""},
		{"empty host: the kubelet dials :port", "", 80, time.Second, ""},
		{"port zero", "h", 0, time.Second, "tcp probe: port 0 out of range 1-65535"},
		{"port too high", "h", 65536, time.Second, "tcp probe: port 65536 out of range 1-65535"},
		{"zero timeout", "h", 80, 0, "tcp probe: timeout 0s must be positive"},
		{"negative timeout", "h", 80, -time.Second, "tcp probe: timeout -1s must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := probe.CheckEndpoint("tcp", tt.host, tt.port, tt.timeout)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckEndpoint(%q, %d, %v) = %q, want %q", tt.host, tt.port, tt.timeout, got, tt.want)
			}
		})
	}
}

package endpoint_test

import (
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/endpoint"
)

func TestUnixPath(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "unix:///run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		{in: "/run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		{in: "unix:///run/probelet/../probelet.sock", want: "/run/probelet.sock"},
		{in: "tcp://127.0.0.1:80", err: "only unix:// endpoints"},
		{in: "unix://relative.sock", err: "must be absolute"},
		{in: "relative.sock", err: "must be absolute"},
		{in: "unix://", err: "must be absolute"},
		{in: "", err: "must be absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := endpoint.UnixPath(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("UnixPath(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("UnixPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestSame(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"unix:///run/a.sock", "/run/a.sock", true},
		{"unix:///run/x/../a.sock", "unix:///run/a.sock", true},
		{"unix:///run/a.sock", "unix:///run/b.sock", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := endpoint.Same(tt.a, tt.b); got != tt.want {
			t.Errorf("Same(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDialRuntimeRefusesABadEndpoint(t *testing.T) {
	if conn, err := endpoint.DialRuntime("tcp://127.0.0.1:1", 1<<20, 1<<20); err == nil {
		conn.Close()
		t.Fatal("DialRuntime(tcp://...) did not fail")
	}
	conn, err := endpoint.DialRuntime("unix:///run/absent.sock", 1<<20, 1<<20)
	if err != nil {
		t.Fatalf("DialRuntime = %v; it must not dial", err)
	}
	conn.Close()
}

package grpcprobe_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/health"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
)

// BenchmarkProbe is one gRPC probe against a loopback health server: a new
// client connection, HTTP/2 handshake, Check, close.
func BenchmarkProbe(b *testing.B) {
	port := startServer(b, health.NewServer())
	b.ReportAllocs()
	for b.Loop() {
		if res, out, err := grpcprobe.Probe(context.Background(), "127.0.0.1", port, "", time.Second); res != probe.Success {
			b.Fatalf("Probe = (%s, %q, %v)", res, out, err)
		}
	}
}

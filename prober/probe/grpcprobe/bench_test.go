package grpcprobe_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/health"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
)

// BenchmarkProbe is one gRPC probe against a loopback health server — a
// new connection, HTTP/2 handshake, Check, close — on one goroutine
// (direct) beside grpc-go's client, as the kubelet probes.
func BenchmarkProbe(b *testing.B) {
	port := startServer(b, health.NewServer())
	for _, bc := range []struct {
		name  string
		probe func(context.Context, string, int, string, time.Duration) (probe.Result, string, error)
	}{
		{"direct", grpcprobe.Probe},
		{"grpc-go", grpcprobe.ProbeWithGRPCGo},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, out, err := bc.probe(context.Background(), "127.0.0.1", port, "", time.Second); res != probe.Success {
					b.Fatalf("Probe = (%s, %q, %v)", res, out, err)
				}
			}
		})
	}
}

package grpcprobe_test

import (
	"context"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
	"github.com/probelet/probelet/quietio"
)

// Under --io=std a gRPC probe is grpc-go's, where the direct client
// deliberately answers otherwise too (a flood of pings it stops counting).
func TestStdIOProbesThroughGRPCGo(t *testing.T) {
	port := pingFlood(t, false)
	const timeout = 300 * time.Millisecond
	wantRes, wantOut, _ := grpcprobe.ProbeWithGRPCGo(context.Background(), "127.0.0.1", port, "", timeout)
	testutil.EachIOMode(t, func(mode string) {
		res, out, err := grpcprobe.Probe(context.Background(), "127.0.0.1", port, "", timeout)
		if same := res == wantRes && out == wantOut && err == nil; same != (mode == quietio.Std) {
			t.Errorf("--io=%s: Probe = (%s, %q, %v), grpc-go = (%s, %q)", mode, res, out, err, wantRes, wantOut)
		}
	})
}

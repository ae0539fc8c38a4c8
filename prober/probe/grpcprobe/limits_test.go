package grpcprobe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
)

// paddedHealth answers SERVING with pad bytes of an unknown field added.
type paddedHealth struct {
	healthpb.UnimplementedHealthServer
	pad int
}

func (h paddedHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	resp := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
	unknown := protowire.AppendTag(nil, 99, protowire.BytesType)
	resp.ProtoReflect().SetUnknown(protowire.AppendBytes(unknown, make([]byte, h.pad)))
	return resp, nil
}

// A health reply is read up to MaxReplyBytes: a target padding it to
// megabytes is a Failure, and the node buffers no more than that.
func TestHealthReplyIsBounded(t *testing.T) {
	tests := []struct {
		name   string
		pad    int
		want   probe.Result
		output string
	}{
		{"a reply with some padding", 1 << 10, probe.Success, "service healthy"},
		{"a 2 MiB reply", 2 << 20, probe.Failure, "larger than max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := grpc.NewServer()
			healthpb.RegisterHealthServer(srv, paddedHealth{pad: tt.pad})
			port := run(t, srv, "tcp4", "127.0.0.1:0")
			res, out, err := grpcprobe.Probe(context.Background(), "127.0.0.1", port, "", 5*time.Second)
			if err != nil || res != tt.want || !strings.Contains(out, tt.output) {
				t.Fatalf("Probe = %v, %q, %v; want %v with %q", res, out, err, tt.want, tt.output)
			}
		})
	}
}

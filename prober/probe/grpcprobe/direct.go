package grpcprobe

import (
	"context"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/probelet/probelet/quietio/grpcwire"
)

// checkDirect is one Health/Check on the calling goroutine, through the
// quiet I/O's gRPC client (grpcwire.Call: grpc-go's answers, its codes and
// texts; direct_test.go and FuzzDirectAnswersAsGRPCGo hold them to
// grpc-go's side by side).
func checkDirect(ctx context.Context, dial dialFunc, addr, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	var resp healthpb.HealthCheckResponse
	err := grpcwire.Call(ctx, dial, addr, healthCheck, userAgent, &healthpb.HealthCheckRequest{Service: service}, &resp, limits)
	if err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}

// limits are the health reply's: see MaxReplyBytes.
var limits = grpcwire.Limits{MaxReply: MaxReplyBytes, MaxHeaderList: MaxHeaderListBytes}

const healthCheck = "/grpc.health.v1.Health/Check"

// userAgent is what grpc-go sends for the kubelet's WithUserAgent.
var userAgent = UserAgent + " grpc-go/" + grpc.Version

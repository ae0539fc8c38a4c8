package grpcprobe_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
)

const testTimeout = 200 * time.Millisecond

func TestProbe(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("web", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus("cache", healthpb.HealthCheckResponse_SERVICE_UNKNOWN)
	withHealth := startServer(t, hs)
	withoutHealth := startServer(t, nil)
	slow := startServer(t, hangingHealth{})
	closed, silent := probetest.ClosedPort(t), probetest.SilentPort(t)

	tests := []struct {
		name       string
		port       int
		service    string
		wantResult probe.Result
		wantOutput string
	}{
		{"overall serving", withHealth, "", probe.Success, "service healthy"},
		{"service serving", withHealth, "web", probe.Success, "service healthy"},
		{"service not serving", withHealth, "db", probe.Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"service status unknown", withHealth, "cache", probe.Failure, `service unhealthy (responded with "SERVICE_UNKNOWN")`},
		{"service not registered", withHealth, "nope", probe.Failure,
			"error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{"no health service", withoutHealth, "", probe.Failure,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"slow health handler", slow, "", probe.Failure, "timeout: health rpc did not complete within 200ms"},
		{"closed port", closed, "", probe.Failure,
			fmt.Sprintf("timeout: failed to connect service %q within 200ms: context deadline exceeded", addr(closed))},
		{"listener never speaks grpc", silent, "", probe.Failure,
			fmt.Sprintf("timeout: failed to connect service %q within 200ms: context deadline exceeded", addr(silent))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := grpcprobe.Probe(context.Background(), "127.0.0.1", tc.port, tc.service, testTimeout)
			if err != nil || res != tc.wantResult || out != tc.wantOutput {
				t.Fatalf("Probe = (%s, %q, %v), want (%s, %q, nil)", res, out, err, tc.wantResult, tc.wantOutput)
			}
		})
	}
}

func TestProbeSendsUserAgent(t *testing.T) {
	agents := make(chan string, 1)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		agents <- strings.Join(md.Get("user-agent"), ",")
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	port := run(t, srv, "tcp4", "127.0.0.1:0")
	if res, out, err := grpcprobe.Probe(context.Background(), "127.0.0.1", port, "", time.Second); res != probe.Success {
		t.Fatalf("Probe = (%s, %q, %v), want success", res, out, err)
	}
	if ua := <-agents; !strings.HasPrefix(ua, "kube-probe/1.37 grpc-go/") {
		t.Fatalf("server saw user-agent %q, want kube-probe/1.37 grpc-go/...", ua)
	}
}

func TestProbeIPv6(t *testing.T) {
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	_ = ln.Close()
	port := run(t, srv, "tcp6", "[::1]:0")
	if res, out, err := grpcprobe.Probe(context.Background(), "::1", port, "", time.Second); res != probe.Success {
		t.Fatalf("Probe([::1]) = (%s, %q, %v), want success", res, out, err)
	}
}

func TestProbeCancelledIsError(t *testing.T) {
	port := startServer(t, hangingHealth{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, _, err := grpcprobe.Probe(ctx, "127.0.0.1", port, "", time.Minute)
	if !errors.Is(err, context.Canceled) || res != probe.Unknown {
		t.Fatalf("Probe(cancelled) = (%s, %v), want unknown and context.Canceled", res, err)
	}
}

func TestProbeBadInput(t *testing.T) {
	tests := []struct {
		name    string
		host    string
		port    int
		timeout time.Duration
		want    string
	}{
		{"port zero", "127.0.0.1", 0, time.Second, "port 0"},
		{"port too big", "127.0.0.1", 65536, time.Second, "port 65536"},
		{"no timeout", "127.0.0.1", 80, 0, "timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := grpcprobe.Probe(context.Background(), tc.host, tc.port, "", tc.timeout)
			if err == nil || res != probe.Unknown || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Probe = (%s, %v), want unknown and an error containing %q", res, err, tc.want)
			}
		})
	}
}

// hangingHealth answers Check only when the caller gives up.
type hangingHealth struct {
	healthpb.UnimplementedHealthServer
}

func (hangingHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// startServer serves hs (none if nil) on a loopback port.
func startServer(t testing.TB, hs healthpb.HealthServer) int {
	t.Helper()
	srv := grpc.NewServer()
	if hs != nil {
		healthpb.RegisterHealthServer(srv, hs)
	}
	return run(t, srv, "tcp4", "127.0.0.1:0")
}

func run(t testing.TB, srv *grpc.Server, network, address string) int {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return ln.Addr().(*net.TCPAddr).Port
}

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// A pod without an IP makes the kubelet dial ":port": the node's own
// addresses.
func TestProbeEmptyHostDialsTheNodesAddress(t *testing.T) {
	hs := health.NewServer()
	port := startServer(t, hs)
	if res, out, err := grpcprobe.Probe(context.Background(), "", port, "", time.Second); err != nil || res != probe.Success {
		t.Fatalf("Probe(:%d) = (%s, %q, %v), want success", port, res, out, err)
	}
}

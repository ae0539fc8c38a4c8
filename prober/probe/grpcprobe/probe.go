// Package grpcprobe answers grpc probes the way the kubelet does: one
// grpc.health.v1.Health/Check over a fresh plaintext connection, with the
// kubelet's output strings.
package grpcprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/quietio"
	"github.com/probelet/probelet/quietio/deadline"
	"github.com/probelet/probelet/quietio/grpcwire"
)

// UserAgent is the kubelet v1.37 probe User-Agent; grpc-go appends its own
// version to it, as it does for the kubelet.
const UserAgent = "kube-probe/1.37"

// Probe checks service on host:port. timeout bounds connecting and the RPC
// together. SERVING is Success ("service healthy"); any other status, a
// connect timeout, an RPC error or timeout is Failure with the kubelet's
// output. An invalid target or a ctx that ends first is an error.
//
// The check runs on the calling goroutine (checkDirect); what it answers
// is grpc-go's, which ProbeWithGRPCGo runs.
func Probe(ctx context.Context, host string, port int, service string, timeout time.Duration) (probe.Result, string, error) {
	if quietio.Off() {
		return ProbeWithGRPCGo(ctx, host, port, service, timeout)
	}
	return probeWith(ctx, checkDirect, dialer.DialRaw, host, port, service, timeout)
}

// ProbeWithGRPCGo is Probe through grpc-go's client, as the kubelet
// probes: the reference Probe is tested against, and the kubelet's cost
// in hack/bench/engine.
func ProbeWithGRPCGo(ctx context.Context, host string, port int, service string, timeout time.Duration) (probe.Result, string, error) {
	return probeWith(ctx, checkGRPCGo, dialer.DialContext, host, port, service, timeout)
}

// check calls Health/Check for service at addr within ctx, its
// connections made by dial. An error is a *grpcwire.ConnectError when no
// connection got ready, else the call's status.
type check func(ctx context.Context, dial dialFunc, addr, service string) (healthpb.HealthCheckResponse_ServingStatus, error)

type dialFunc = func(ctx context.Context, network, address string) (net.Conn, error)

func probeWith(ctx context.Context, call check, dial dialFunc, host string, port int, service string, timeout time.Duration) (probe.Result, string, error) {
	if err := probe.CheckEndpoint("grpc", host, port, timeout); err != nil {
		return probe.Unknown, "", err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	pctx := ctx
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	ctx, cancel := deadline.WithTimeout(ctx, timeout)
	defer cancel()

	s, err := call(ctx, fromOrigin(podnet.FromContext(pctx), abort, dial), addr, service)
	var ce *grpcwire.ConnectError
	switch {
	case err != nil && pctx.Err() != nil:
		return probe.Unknown, "", fmt.Errorf("grpc probe of %s: %w", addr, pctx.Err())
	case err != nil && podnet.IsSocketError(context.Cause(ctx)):
		return probe.Unknown, "", fmt.Errorf("grpc probe of %s: %w", addr, context.Cause(ctx))
	case errors.As(err, &ce):
		return probe.Failure, connectFailure(addr, timeout, ce.Err), nil
	case err != nil:
		return probe.Failure, rpcFailure(err, timeout), nil
	case s != healthpb.HealthCheckResponse_SERVING:
		return probe.Failure, fmt.Sprintf("service unhealthy (responded with %q)", s.String()), nil
	}
	return probe.Success, "service healthy", nil
}

// fromOrigin is dial from ns (nil: the node's namespace), whichever
// context its caller gives it (grpc-go gives its own). A socket the pod's
// namespace cannot give aborts the probe with that cause at once, where
// the connect's retries would have made it a timeout, a Failure.
func fromOrigin(ns *podnet.Namespace, abort context.CancelCauseFunc, dial dialFunc) dialFunc {
	if ns == nil {
		return dial
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(podnet.WithNamespace(ctx, ns), network, address)
		if podnet.IsSocketError(err) {
			abort(err)
		}
		return c, err
	}
}

// checkGRPCGo is the kubelet's call: a blocking connect, then the RPC.
func checkGRPCGo(ctx context.Context, dial dialFunc, addr, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	conn, err := connect(ctx, dial, addr)
	if err != nil {
		return 0, &grpcwire.ConnectError{Err: err}
	}
	defer func() { _ = conn.Close() }()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}

func connectFailure(addr string, timeout time.Duration, err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err)
	}
	return fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
}

func rpcFailure(err error, timeout time.Duration) string {
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unimplemented:
			return "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message()
		case codes.DeadlineExceeded:
			return fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
		}
	}
	return fmt.Sprintf("error: health rpc probe failed: %+v", err)
}

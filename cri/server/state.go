package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"go.uber.org/zap"
	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// StateGuard decides whether a bearer token may read the node's probe
// state. It returns nil, or a gRPC status error (Unauthenticated,
// PermissionDenied, Unavailable) that the caller gets as it is.
type StateGuard func(ctx context.Context, token string) error

// Bounds of the state listener: it faces the network (any pod can reach a
// node's address), so what a caller can make it hold is small and fixed.
const (
	stateMaxConns      = 16
	stateMaxStreams    = 4
	stateMaxRecv       = 64 << 10 // a request is a namespace and some pod names
	stateHandshakeTime = 5 * time.Second
	stateIdle          = 2 * time.Minute
)

// stateService is what the state listener serves of probelet's API: the
// version and ListExplained. Everything else (streams, single containers
// by ID) stays on the unix socket.
type stateService struct {
	apiv1.UnimplementedProbeletServer
	api *apiService
}

func (s stateService) Version(ctx context.Context, req *apiv1.VersionRequest) (*apiv1.VersionResponse, error) {
	return s.api.Version(ctx, req)
}

func (s stateService) ListExplained(ctx context.Context, req *apiv1.ListExplainedRequest) (*apiv1.ListExplainedResponse, error) {
	return s.api.ListExplained(ctx, req)
}

// ServeState serves the probe-state API's reads on lis over TLS with cert,
// each call let through by guard, until ctx ends. It is apart from the
// socket's server: its own connection bounds, its own life.
func (s *Server) ServeState(ctx context.Context, lis net.Listener, cert tls.Certificate, guard StateGuard) error {
	if guard == nil {
		return errors.New("server: the state listener needs a guard")
	}
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	g := grpc.NewServer(grpc.Creds(creds),
		grpc.ConnectionTimeout(stateHandshakeTime),
		grpc.MaxRecvMsgSize(stateMaxRecv),
		grpc.MaxConcurrentStreams(stateMaxStreams),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: stateIdle}),
		grpc.ChainUnaryInterceptor(guarded(guard, s.log)),
		grpc.ChainStreamInterceptor(func(any, grpc.ServerStream, *grpc.StreamServerInfo, grpc.StreamHandler) error {
			return status.Error(codes.Unimplemented, "the state listener serves no streams")
		}))
	apiv1.RegisterProbeletServer(g, stateService{api: &apiService{s: s}})
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(netutil.LimitListener(lis, stateMaxConns)) }()
	s.log.Info("serving probe state", zap.Stringer("address", lis.Addr()))
	select {
	case <-ctx.Done():
		stopped := make(chan struct{})
		go func() { g.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(s.shutdownTimeout):
			g.Stop()
		}
		<-errc
		return nil
	case err := <-errc:
		return err
	}
}

// guarded lets a call through when guard accepts its bearer token.
func guarded(guard StateGuard, log *zap.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		token := ""
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if v := md.Get("authorization"); len(v) == 1 {
				token = v[0]
			}
		}
		if err := guard(ctx, token); err != nil {
			log.Debug("state read refused", zap.String("method", info.FullMethod), zap.Error(err))
			return nil, err
		}
		return handler(ctx, req)
	}
}

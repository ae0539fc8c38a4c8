package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/internal/unixsocket"
	"github.com/probelet/probelet/internal/version"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/prober"
)

// Server serves the read-only CRI services, probelet's API and gRPC health
// on one unix socket.
type Server struct {
	status prober.StatusSource
	view   lifecycle.View
	nri    NRIStatus
	tcp    func() TCPStatus // nil: not reported
	log    *zap.Logger
	clock  clock.Clock

	version         string
	socketGID       int
	streamQueue     int
	eventHistory    int
	pastEvents      []prober.Event
	shutdownTimeout time.Duration

	grpc   *grpc.Server
	health *health.Server
	events *eventLog

	mu       sync.Mutex
	listener net.Listener
	path     string
	release  func() // closes the listener, removes the socket if still ours
	// done is closed by stop (with stopped set under mu); streams end and
	// background work returns.
	done     chan struct{}
	stopped  bool
	stopOnce sync.Once
	bg       sync.WaitGroup
}

// NRIStatus says whether the NRI plugin is registered with the runtime;
// *plugin.Plugin is one.
type NRIStatus interface {
	Connected() bool
}

type neverConnected struct{}

func (neverConnected) Connected() bool { return false }

// New builds a Server over the two read sides. It does not listen yet.
func New(status prober.StatusSource, view lifecycle.View, opts ...Option) (*Server, error) {
	if status == nil || view == nil {
		return nil, errors.New("server: status source and lifecycle view are required")
	}
	s := &Server{
		status:          status,
		view:            view,
		nri:             neverConnected{},
		log:             zap.NewNop(),
		clock:           clock.RealClock{},
		version:         version.Version,
		streamQueue:     1024,
		eventHistory:    512,
		shutdownTimeout: 5 * time.Second,
		done:            make(chan struct{}),
	}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, err
		}
	}
	s.events = newEventLog(s.eventHistory)
	for _, ev := range s.pastEvents {
		s.events.add(ev)
	}
	s.grpc = grpc.NewServer(
		grpc.ChainUnaryInterceptor(readOnlyUnary),
		grpc.ChainStreamInterceptor(readOnlyStream),
	)
	s.health = health.NewServer()
	s.register()
	return s, nil
}

// register puts every service on the gRPC server and marks them serving.
func (s *Server) register() {
	runtimeapi.RegisterRuntimeServiceServer(s.grpc, &runtimeService{s: s})
	runtimeapi.RegisterImageServiceServer(s.grpc, &imageService{s: s})
	apiv1.RegisterProbeletServer(s.grpc, &apiService{s: s})
	healthpb.RegisterHealthServer(s.grpc, s.health)
	for _, name := range []string{
		"",
		runtimeapi.RuntimeService_ServiceDesc.ServiceName,
		runtimeapi.ImageService_ServiceDesc.ServiceName,
		apiv1.Probelet_ServiceDesc.ServiceName,
	} {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
}

// Listen creates the unix socket for endpoint (unix:///path). It refuses
// to take over a socket another process is serving on and replaces a
// stale one. Serve must follow: its context owns the server's life, and
// only the end of Serve releases the socket (a Serve with a context that
// has already ended releases it at once).
func (s *Server) Listen(endpoint string) error {
	path, err := SocketPath(endpoint)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return fmt.Errorf("server: already listening on %s", s.path)
	}
	l, release, stale, err := unixsocket.Listen(path, s.socketGID)
	if err != nil {
		return err
	}
	if stale {
		s.log.Info("replaced a stale socket", zap.String("path", path))
	}
	s.listener, s.path, s.release = l, path, release
	s.log.Info("listening", zap.String("socket", path))
	return nil
}

// Path returns the socket path after Listen.
func (s *Server) Path() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.path
}

// Serve serves on the socket made by Listen until ctx ends; then it ends
// every stream, waits up to the shutdown timeout for in-flight calls,
// closes all connections, removes the socket and returns nil.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	l := s.listener
	stopped := s.stopped
	if l != nil && !stopped {
		s.bg.Add(1) // under mu, so stop's Wait cannot miss it
	}
	s.mu.Unlock()
	if l == nil {
		return errors.New("server: Serve called before Listen")
	}
	if stopped {
		return nil
	}
	s.startEventLog()
	errc := make(chan error, 1)
	go func() { errc <- s.grpc.Serve(l) }()
	select {
	case <-ctx.Done():
		s.stop()
		return served(<-errc)
	case err := <-errc:
		s.stop()
		return served(err)
	}
}

// ListenAndServe is Listen followed by Serve.
func (s *Server) ListenAndServe(ctx context.Context, endpoint string) error {
	if err := s.Listen(endpoint); err != nil {
		return err
	}
	return s.Serve(ctx)
}

// stop ends every stream, waits up to the shutdown timeout for in-flight
// calls, closes all connections and removes the socket. It is idempotent.
func (s *Server) stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		close(s.done)
		s.mu.Unlock()
		s.health.Shutdown()
		s.stopGRPC()
		s.bg.Wait()
		s.removeSocket()
	})
}

// stopGRPC stops gracefully, or hard once the shutdown timeout passes: a
// handler can be stuck sending to a client that does not read.
func (s *Server) stopGRPC() {
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-s.clock.After(s.shutdownTimeout):
		s.log.Warn("shutdown timeout passed; closing connections", zap.Duration("timeout", s.shutdownTimeout))
		s.grpc.Stop()
		<-stopped
	}
}

// removeSocket closes the listener (Listen without Serve leaves it open)
// and removes the socket file if it is still ours.
func (s *Server) removeSocket() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.release != nil {
		s.release()
	}
}

// startEventLog records probe events in the background until Stop; the
// caller has done bg.Add(1).
func (s *Server) startEventLog() {
	ch, cancel := s.status.SubscribeEvents(s.streamQueue)
	go func() {
		defer s.bg.Done()
		defer cancel()
		s.events.run(s.done, ch)
	}()
}

// served maps the error of a server stopped on purpose to nil.
func served(err error) error {
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

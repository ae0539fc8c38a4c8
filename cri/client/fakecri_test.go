package client_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/testutil"
)

// fakeCRI is an in-process CRI RuntimeService on a unix socket. Commands
// given to ExecSync pick its answer: "exit N", "print 1MiB-1KiB|2MiB"
// (that much stdout, exit 1), "wait" (block until release is closed),
// "timeout" (containerd's
// answer to a command outliving its timeout), "timeout-text" (the same
// without the gRPC code), "hang" (block until the caller gives up),
// anything else succeeds.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu        sync.Mutex
	execReqs  []*runtimeapi.ExecSyncRequest
	stopReqs  []*runtimeapi.StopContainerRequest
	stopErr   error
	pods      []*runtimeapi.PodSandbox
	ctrs      []*runtimeapi.Container
	podStatus map[string]*runtimeapi.PodSandboxStatusResponse
	ctrStatus map[string]*runtimeapi.ContainerStatusResponse
	// ctrStatusErr, when set, is ContainerStatus's answer.
	ctrStatusErr error
	// hanging, when set, receives a value each time a "hang" or "wait"
	// exec starts ("wait" needs it).
	hanging chan<- struct{}
	// release ends every "wait" exec once closed.
	release chan struct{}
}

func (f *fakeCRI) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	f.mu.Lock()
	f.execReqs = append(f.execReqs, req)
	f.mu.Unlock()
	switch req.Cmd[0] {
	case "exit":
		code := map[string]int32{"0": 0, "1": 1, "3": 3}[req.Cmd[1]]
		return &runtimeapi.ExecSyncResponse{Stdout: []byte("out"), Stderr: []byte("err"), ExitCode: code}, nil
	case "print":
		n := map[string]int{"1MiB-1KiB": 1<<20 - 1<<10, "2MiB": 2 << 20}[req.Cmd[1]]
		return &runtimeapi.ExecSyncResponse{Stdout: bytes.Repeat([]byte("x"), n), ExitCode: 1}, nil
	case "timeout":
		return nil, status.Error(codes.DeadlineExceeded, "failed to exec in container: timeout 1s exceeded: context deadline exceeded")
	case "timeout-text":
		return nil, status.Error(codes.Unknown, "failed to exec in container: timeout 1s exceeded: context deadline exceeded")
	case "missing":
		return nil, status.Error(codes.NotFound, "container not found")
	case "wait":
		f.mu.Lock()
		hanging, release := f.hanging, f.release
		f.mu.Unlock()
		hanging <- struct{}{}
		<-release
		return &runtimeapi.ExecSyncResponse{}, nil
	case "hang":
		f.mu.Lock()
		hanging := f.hanging
		f.mu.Unlock()
		select {
		case hanging <- struct{}{}:
		default: // nil, or nobody waiting
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &runtimeapi.ExecSyncResponse{}, nil
}

func (f *fakeCRI) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopReqs = append(f.stopReqs, req)
	if f.stopErr != nil {
		return nil, f.stopErr
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "containerd", RuntimeVersion: "v2.4.2", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeCRI) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: f.pods}, nil
}

func (f *fakeCRI) ListContainers(context.Context, *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: f.ctrs}, nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if r, ok := f.podStatus[req.PodSandboxId]; ok {
		return r, nil
	}
	return nil, status.Error(codes.NotFound, "no such sandbox")
}

func (f *fakeCRI) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if f.ctrStatusErr != nil {
		return nil, f.ctrStatusErr
	}
	if r, ok := f.ctrStatus[req.ContainerId]; ok {
		return r, nil
	}
	return nil, status.Error(codes.NotFound, "no such container")
}

func (f *fakeCRI) lastExec() *runtimeapi.ExecSyncRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execReqs[len(f.execReqs)-1]
}

func (f *fakeCRI) lastStop() *runtimeapi.StopContainerRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopReqs[len(f.stopReqs)-1]
}

// criServer runs a fakeCRI; stop and serve again simulate a runtime restart.
type criServer struct {
	t    *testing.T
	path string
	fake *fakeCRI
	srv  *grpc.Server
	// opts are the gRPC server's; accepted counts its connections.
	opts     []grpc.ServerOption
	accepted atomic.Int32
}

func newCRIServer(t *testing.T, fake *fakeCRI, opts ...grpc.ServerOption) *criServer {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &criServer{t: t, path: filepath.Join(dir, "containerd.sock"), fake: fake, opts: opts}
	s.serve()
	t.Cleanup(s.stop)
	return s
}

func (s *criServer) serve() {
	s.t.Helper()
	os.Remove(s.path)
	l, err := net.Listen("unix", s.path)
	if err != nil {
		s.t.Fatal(err)
	}
	s.srv = grpc.NewServer(s.opts...)
	runtimeapi.RegisterRuntimeServiceServer(s.srv, s.fake)
	go s.srv.Serve(testutil.CountAccepts{Listener: l, N: &s.accepted})
}

func (s *criServer) stop() {
	if s.srv != nil {
		s.srv.Stop()
		s.srv = nil
	}
}

func (s *criServer) endpoint() string { return "unix://" + s.path }

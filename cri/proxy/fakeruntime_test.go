package proxy_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime is an in-process CRI runtime on a unix socket: a small
// store of sandboxes and containers, a GetContainerEvents stream fed by
// the test, per-method call counts, and hooks to block or fail a call.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	t      testing.TB
	socket string
	srv    *grpc.Server

	mu      sync.Mutex
	sbs     map[string]*runtimeapi.PodSandbox
	ips     map[string]string // sandbox ID → address its status reports
	ctrs    map[string]*runtimeapi.Container
	calls   map[string]int
	lastMD  map[string]metadata.MD
	streams []chan *runtimeapi.ContainerEventResponse
	// block, when set for a method, is waited on by that method's next
	// call, after it read the store (a read in flight).
	block map[string]chan struct{}
	// entered receives the method's name when a blocked call is waiting.
	entered chan string
	// failNext makes the next call of a method fail with this error.
	failNext map[string]error
	// execStdout, when set, is what ExecSync answers on stdout.
	execStdout []byte
	// streamOpened receives a value when a GetContainerEvents stream opens.
	streamOpened chan struct{}
	// endStreams ends every GetContainerEvents stream at once, sending
	// nothing: CRI-O without enable_pod_events.
	endStreams bool
}

func startFakeRuntime(t testing.TB) *fakeRuntime {
	t.Helper()
	dir, err := os.MkdirTemp("", "pxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fakeRuntime{
		t: t, socket: filepath.Join(dir, "rt.sock"),
		sbs: map[string]*runtimeapi.PodSandbox{}, ips: map[string]string{}, ctrs: map[string]*runtimeapi.Container{},
		calls: map[string]int{}, lastMD: map[string]metadata.MD{}, block: map[string]chan struct{}{}, failNext: map[string]error{},
		entered: make(chan string, 16), streamOpened: make(chan struct{}, 16),
	}
	f.start()
	t.Cleanup(f.stop)
	return f
}

func (f *fakeRuntime) start() {
	l, err := net.Listen("unix", f.socket)
	if err != nil {
		f.t.Fatal(err)
	}
	f.srv = grpc.NewServer(grpc.UnknownServiceHandler(f.unknown))
	runtimeapi.RegisterRuntimeServiceServer(f.srv, f)
	go func() { _ = f.srv.Serve(l) }()
}

// stop is a runtime going away: every stream and connection ends.
func (f *fakeRuntime) stop() {
	f.mu.Lock()
	for _, s := range f.streams {
		close(s)
	}
	f.streams = nil
	f.mu.Unlock()
	f.srv.Stop()
}

func (f *fakeRuntime) endpoint() string { return "unix://" + f.socket }

// enter counts a call, records its metadata and applies failNext.
func (f *fakeRuntime) enter(ctx context.Context, method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	f.lastMD[method], _ = metadata.FromIncomingContext(ctx)
	if err := f.failNext[method]; err != nil {
		delete(f.failNext, method)
		return err
	}
	return nil
}

// wait blocks a call that read the store when the test asked for it.
func (f *fakeRuntime) wait(method string) {
	f.mu.Lock()
	ch := f.block[method]
	delete(f.block, method)
	f.mu.Unlock()
	if ch != nil {
		f.entered <- method
		<-ch
	}
}

func (f *fakeRuntime) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// emit sends a runtime event on every open stream.
func (f *fakeRuntime) emit(ev *runtimeapi.ContainerEventResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.streams {
		s <- ev
	}
}

// addPod adds a ready sandbox with one container in state st.
func (f *fakeRuntime) addPod(sb, ctr string, st runtimeapi.ContainerState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sbs[sb] = &runtimeapi.PodSandbox{Id: sb, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: 1,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-" + sb, Uid: "uid-" + sb, Namespace: "default"},
		Labels:   map[string]string{"app": sb}}
	f.ctrs[ctr] = &runtimeapi.Container{Id: ctr, PodSandboxId: sb, State: st, CreatedAt: 2,
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Labels: map[string]string{"app": sb}}
}

// setState changes a container's state, as the runtime records an exit.
func (f *fakeRuntime) setState(ctr string, st runtimeapi.ContainerState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctrs[ctr].State = st
}

// setSandbox sets a sandbox's state and the address its status reports.
func (f *fakeRuntime) setSandbox(sb string, st runtimeapi.PodSandboxState, ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sbs[sb].State = st
	f.ips[sb] = ip
}

func (f *fakeRuntime) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ctrs, id)
	delete(f.sbs, id)
}

func (f *fakeRuntime) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if err := f.enter(ctx, "Version"); err != nil {
		return nil, err
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-runtime-header", "h"))
	_ = grpc.SetTrailer(ctx, metadata.Pairs("x-runtime-trailer", "t"))
	dl, ok := ctx.Deadline()
	deadline := "none"
	if ok {
		deadline = fmt.Sprint(dl.UnixMilli())
	}
	return &runtimeapi.VersionResponse{Version: req.GetVersion(), RuntimeName: "fake", RuntimeVersion: deadline, RuntimeApiVersion: "v1"}, nil
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := f.enter(ctx, "ListPodSandbox"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, sb := range f.sbs {
		if st := req.GetFilter().GetState(); st != nil && st.GetState() != sb.State {
			continue
		}
		if !matches(sb.Labels, req.GetFilter().GetLabelSelector()) {
			continue
		}
		resp.Items = append(resp.Items, clone(sb))
	}
	f.mu.Unlock()
	f.wait("ListPodSandbox")
	return resp, nil
}

func (f *fakeRuntime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	if err := f.enter(ctx, "ListContainers"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range f.ctrs {
		if st := req.GetFilter().GetState(); st != nil && st.GetState() != c.State {
			continue
		}
		if !matches(c.Labels, req.GetFilter().GetLabelSelector()) {
			continue
		}
		resp.Containers = append(resp.Containers, clone(c))
	}
	f.mu.Unlock()
	f.wait("ListContainers")
	return resp, nil
}

func (f *fakeRuntime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := f.enter(ctx, "PodSandboxStatus"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	sb, ok := f.sbs[req.GetPodSandboxId()]
	var resp *runtimeapi.PodSandboxStatusResponse
	if ok {
		resp = &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
			Id: sb.Id, Metadata: sb.Metadata, State: sb.State, CreatedAt: sb.CreatedAt, Labels: sb.Labels}}
		if ip := f.ips[sb.Id]; ip != "" {
			resp.Status.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ip}
		}
		if req.GetVerbose() {
			resp.Info = map[string]string{"info": "verbose"}
		}
	}
	f.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "an error occurred when try to find sandbox %q: not found", req.GetPodSandboxId())
	}
	f.wait("PodSandboxStatus")
	return resp, nil
}

func (f *fakeRuntime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if err := f.enter(ctx, "ContainerStatus"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	c, ok := f.ctrs[req.GetContainerId()]
	var resp *runtimeapi.ContainerStatusResponse
	if ok {
		resp = &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
			Id: c.Id, Metadata: c.Metadata, State: c.State, CreatedAt: c.CreatedAt, Labels: c.Labels}}
		if c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			resp.Status.StartedAt = 3
		}
	}
	f.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "an error occurred when try to find container %q: not found", req.GetContainerId())
	}
	f.wait("ContainerStatus")
	return resp, nil
}

func (f *fakeRuntime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if err := f.enter(ctx, "StopContainer"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	c, ok := f.ctrs[req.GetContainerId()]
	if ok {
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	}
	f.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, s grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	if err := f.enter(s.Context(), "GetContainerEvents"); err != nil {
		return err
	}
	f.mu.Lock()
	end := f.endStreams
	f.mu.Unlock()
	if end {
		return nil
	}
	ch := make(chan *runtimeapi.ContainerEventResponse, 64)
	f.mu.Lock()
	f.streams = append(f.streams, ch)
	f.mu.Unlock()
	f.streamOpened <- struct{}{}
	for {
		select {
		case <-s.Context().Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				return status.Error(codes.Unavailable, "runtime stopped")
			}
			if err := s.Send(ev); err != nil {
				return err
			}
		}
	}
}

// unknown answers a method the CRI does not have (a newer kubelet's):
// it echoes the request bytes back, wrapped.
func (f *fakeRuntime) unknown(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	if err := f.enter(ss.Context(), method); err != nil {
		return err
	}
	var in wrapperspb.StringValue
	if err := ss.RecvMsg(&in); err != nil {
		return err
	}
	return ss.SendMsg(wrapperspb.String(fmt.Sprintf("%s(%s)", method, in.GetValue())))
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// ExecSync answers as a runtime would: "runtime ran CMD" and exit code 7,
// or failNext's error.
func (f *fakeRuntime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if err := f.enter(ctx, "ExecSync"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	stdout := f.execStdout
	f.mu.Unlock()
	if stdout == nil {
		stdout = fmt.Appendf(nil, "runtime ran %v", req.Cmd)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout, ExitCode: 7}, nil
}

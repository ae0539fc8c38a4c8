package client_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cri/client"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe/execprobe"
)

func newClient(t *testing.T, endpoint string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestExecSync(t *testing.T) {
	srv := newCRIServer(t, &fakeCRI{})
	c := newClient(t, srv.endpoint())
	tests := []struct {
		name        string
		cmd         []string
		timeout     time.Duration
		wantCode    int32
		wantOut     string
		wantTimeout bool
		wantErr     bool
		wantReqSecs int64
	}{
		{"success", []string{"exit", "0"}, time.Second, 0, "out", false, false, 1},
		{"non-zero exit is not an error", []string{"exit", "3"}, 2 * time.Second, 3, "out", false, false, 2},
		{"sub-second timeout rounds up", []string{"exit", "1"}, 300 * time.Millisecond, 1, "out", false, false, 1},
		{"no timeout", []string{"exit", "0"}, 0, 0, "out", false, false, 0},
		{"runtime reports the timeout", []string{"timeout"}, time.Second, 0, "", true, false, 1},
		{"timeout in the error text only", []string{"timeout-text"}, time.Second, 0, "", true, false, 1},
		{"other runtime errors", []string{"missing"}, time.Second, 0, "", false, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code, err := c.ExecSync(context.Background(), "c1", tt.cmd, tt.timeout)
			if got := errors.Is(err, execprobe.ErrTimeout); got != tt.wantTimeout {
				t.Fatalf("err = %v, timeout = %v, want %v", err, got, tt.wantTimeout)
			}
			if (err != nil && !tt.wantTimeout) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if code != tt.wantCode || string(out) != tt.wantOut || (tt.wantOut != "" && string(errOut) != "err") {
				t.Errorf("got (%q, %q, %d), want (%q, err, %d)", out, errOut, code, tt.wantOut, tt.wantCode)
			}
			req := srv.fake.lastExec()
			if req.ContainerId != "c1" || req.Timeout != tt.wantReqSecs {
				t.Errorf("request = %v, want container c1 and timeout %ds", req, tt.wantReqSecs)
			}
		})
	}
}

// TestExecSyncReadsABoundedReply: a command printing more than
// MaxExecReply costs probelet no more than that: the reply is refused
// unread and the run is an error naming the command and the bound (not a
// timeout, not a result); one just under the bound is read whole.
func TestExecSyncReadsABoundedReply(t *testing.T) {
	srv := newCRIServer(t, &fakeCRI{})
	c := newClient(t, srv.endpoint())
	for _, tt := range []struct {
		size    string
		wantErr bool
	}{
		{"1MiB-1KiB", false},
		{"2MiB", true},
	} {
		t.Run(tt.size, func(t *testing.T) {
			out, _, code, err := c.ExecSync(context.Background(), "c1", []string{"print", tt.size}, time.Second)
			if !tt.wantErr {
				if err != nil || code != 1 || len(out) != client.MaxExecReply-1<<10 {
					t.Fatalf("ExecSync = %d bytes, exit %d, %v; want the whole reply", len(out), code, err)
				}
				return
			}
			if err == nil || errors.Is(err, execprobe.ErrTimeout) || out != nil {
				t.Fatalf("ExecSync = %d bytes, %v; want an error that is not a timeout", len(out), err)
			}
			for _, want := range []string{`"print 2MiB"`, "over 1024 KiB", "c1"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %s", err, want)
				}
			}
		})
	}
}

func TestExecSyncCallerDeadlineAndCancel(t *testing.T) {
	fake := &fakeCRI{}
	srv := newCRIServer(t, fake)
	c := newClient(t, srv.endpoint())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, _, err := c.ExecSync(ctx, "c1", []string{"hang"}, time.Second); !errors.Is(err, execprobe.ErrTimeout) {
		t.Errorf("caller deadline: err = %v, want ErrTimeout", err)
	}

	hanging := make(chan struct{}, 1)
	fake.mu.Lock()
	fake.hanging = hanging
	fake.mu.Unlock()
	ctx, cancel = context.WithCancel(context.Background())
	go func() { <-hanging; cancel() }() // cancel once the call hangs in the runtime
	_, _, _, err := c.ExecSync(ctx, "c1", []string{"hang"}, time.Second)
	if err == nil || errors.Is(err, execprobe.ErrTimeout) {
		t.Errorf("cancelled caller: err = %v, want a plain error", err)
	}
}

// StopContainer's timeout is in whole seconds, rounded up: a sub-second
// grace must not become 0, which CRI reads as "none".
func TestStopContainerTimeoutInWholeSeconds(t *testing.T) {
	tests := []struct {
		grace time.Duration
		want  int64
	}{
		{30 * time.Second, 30},
		{2 * time.Second, 2},
		{2500 * time.Millisecond, 3},
		{time.Millisecond, 1},
	}
	for _, tt := range tests {
		fake := &fakeCRI{}
		c := newClient(t, newCRIServer(t, fake).endpoint())
		if err := c.StopContainer(context.Background(), "c1", tt.grace); err != nil {
			t.Fatalf("grace %s: %v", tt.grace, err)
		}
		if req := fake.lastStop(); req.ContainerId != "c1" || req.Timeout != tt.want {
			t.Errorf("grace %s: StopContainer%v, want timeout %d", tt.grace, req, tt.want)
		}
	}
}

// A runtime's NotFound stays visible through the client's wrapping: the
// killer reads it as "removed between the check and the stop".
func TestStopContainerKeepsTheRuntimesCode(t *testing.T) {
	c := newClient(t, newCRIServer(t, &fakeCRI{stopErr: status.Error(codes.NotFound, "gone")}).endpoint())
	if err := c.StopContainer(context.Background(), "c1", time.Second); status.Code(err) != codes.NotFound {
		t.Fatalf("err = %v (code %v), want NotFound", err, status.Code(err))
	}
}

func TestSurvivesRuntimeRestart(t *testing.T) {
	srv := newCRIServer(t, &fakeCRI{})
	c := newClient(t, srv.endpoint())
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	if _, err := c.Version(context.Background()); status.Code(errors.Unwrap(err)) != codes.Unavailable {
		t.Fatalf("runtime down: err = %v, want Unavailable", err)
	}
	srv.serve()
	back := time.Now()
	var v *runtimeapi.VersionResponse
	var err error
	defer func() { // why, when the client did not reconnect
		if err != nil {
			t.Logf("the last call: %v", err)
		}
	}()
	testutil.WaitFor(t, "the client to reconnect", func() bool {
		v, err = c.Version(context.Background())
		return err == nil
	})
	if v.RuntimeVersion != "v2.4.2" {
		t.Errorf("version = %v", v)
	}
	t.Logf("CRI calls work again %s after the runtime came back", time.Since(back).Round(time.Millisecond))
}

func TestLister(t *testing.T) {
	ctrInfo, err := os.ReadFile("testdata/container_info.json")
	if err != nil {
		t.Fatal(err)
	}
	sbInfo, err := os.ReadFile("testdata/sandbox_info.json")
	if err != nil {
		t.Fatal(err)
	}
	meta := &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "uid1", Namespace: "default"}
	fake := &fakeCRI{
		pods: []*runtimeapi.PodSandbox{{Id: "sb1", Metadata: meta, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: 1e18},
			{Id: "sb0", Metadata: meta, State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}},
		ctrs: []*runtimeapi.Container{{Id: "c1", PodSandboxId: "sb1", Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
			State: runtimeapi.ContainerState_CONTAINER_RUNNING, Image: &runtimeapi.ImageSpec{Image: "busybox:latest"}}},
		podStatus: map[string]*runtimeapi.PodSandboxStatusResponse{"sb1": {
			Status: &runtimeapi.PodSandboxStatus{Id: "sb1", Metadata: meta, CreatedAt: 1e18,
				Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.88.0.5", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::5"}}}},
			Info: map[string]string{"info": string(sbInfo)}}},
		ctrStatus: map[string]*runtimeapi.ContainerStatusResponse{"c1": {
			Status: &runtimeapi.ContainerStatus{Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
				State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: 2e18},
			Info: map[string]string{"info": string(ctrInfo)}}},
	}
	srv := newCRIServer(t, fake)
	l := newClient(t, srv.endpoint()).Lister()
	ctx := context.Background()

	sbs, err := l.ListSandboxes(ctx)
	if err != nil || len(sbs) != 2 || !sbs[0].Ready || sbs[1].Ready || sbs[0].UID != "uid1" || sbs[0].CreatedAt.UnixNano() != 1e18 {
		t.Fatalf("ListSandboxes = %+v, %v", sbs, err)
	}
	ctrs, err := l.ListContainers(ctx)
	if err != nil || len(ctrs) != 1 || ctrs[0].SandboxID != "sb1" || ctrs[0].State != node.StateRunning || ctrs[0].Image != "busybox:latest" {
		t.Fatalf("ListContainers = %+v, %v", ctrs, err)
	}
	sb, err := l.SandboxStatus(ctx, "sb1")
	if err != nil || sb.Pid != 77 || sb.NetNSPath != "/run/containerd/netns/cni-1234" || len(sb.IPs) != 2 || sb.IPs[1] != "fd00::5" {
		t.Fatalf("SandboxStatus = %+v, %v", sb, err)
	}
	ct, err := l.ContainerStatus(ctx, "c1")
	if err != nil || ct.SandboxID != "sb1" || ct.Pid != 4242 || ct.StartedAt.UnixNano() != 2e18 {
		t.Fatalf("ContainerStatus = %+v, %v", ct, err)
	}
	if _, err := l.ContainerStatus(ctx, "nope"); err == nil {
		t.Error("missing container: no error")
	}
}

func TestEndpoints(t *testing.T) {
	tests := []struct {
		endpoint string
		want     string
		wantErr  bool
	}{
		{"unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock", false},
		{"/run/containerd/containerd.sock", "/run/containerd/containerd.sock", false},
		{"tcp://127.0.0.1:1234", "", true},
		{"unix://relative.sock", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		got, err := client.SocketPath(tt.endpoint)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q, error %v", tt.endpoint, got, err, tt.want, tt.wantErr)
		}
		if _, err := client.New(tt.endpoint); (err != nil) != tt.wantErr {
			t.Errorf("New(%q) error = %v, want error %v", tt.endpoint, err, tt.wantErr)
		}
	}
	if _, err := client.New(client.DefaultEndpoint, client.WithTimeout(0)); err == nil {
		t.Error("zero timeout accepted")
	}
}

package agent_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cmd/probelet/agent"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/plugin"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
)

func TestMain(m *testing.M) {
	nrilog.Set(quiet{}) // the in-process runtime logs through logrus
	os.Exit(m.Run())
}

type quiet struct{}

func (quiet) Debugf(context.Context, string, ...any) {}
func (quiet) Infof(context.Context, string, ...any)  {}
func (quiet) Warnf(context.Context, string, ...any)  {}
func (quiet) Errorf(context.Context, string, ...any) {}

// fakeCRI answers exec probes by command ("true" exits 0, anything else 1)
// and records kills.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu    sync.Mutex
	stops []*runtimeapi.StopContainerRequest
}

func (f *fakeCRI) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if req.Cmd[0] == "true" {
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	return &runtimeapi.ExecSyncResponse{ExitCode: 1, Stderr: []byte("not healthy")}, nil
}

func (f *fakeCRI) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, req)
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeCRI) stopped() []*runtimeapi.StopContainerRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*runtimeapi.StopContainerRequest(nil), f.stops...)
}

func serveCRI(t *testing.T, path string, f *fakeCRI) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(s, f)
	go s.Serve(l)
	t.Cleanup(s.Stop)
}

func startNRI(t *testing.T, dir string) *nri.Adaptation {
	t.Helper()
	sync := func(ctx context.Context, cb nri.SyncCB) error { _, err := cb(ctx, nil, nil); return err }
	update := func(context.Context, []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) { return nil, nil }
	a, err := nri.New("fake-containerd", "v2.4.2", sync, update,
		nri.WithSocketPath(filepath.Join(dir, "nri.sock")),
		nri.WithPluginPath(filepath.Join(dir, "plugins")), nri.WithPluginConfigPath(filepath.Join(dir, "conf.d")))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	return a
}

func testConfig(dir string) agent.Config {
	cfg := agent.Default()
	cfg.NRISocket = filepath.Join(dir, "nri.sock")
	cfg.RuntimeEndpoint = "unix://" + filepath.Join(dir, "cri.sock")
	cfg.Listen = "unix://" + filepath.Join(dir, "probelet.sock")
	cfg.MetricsBindAddress = "127.0.0.1:0"
	cfg.TCPMode = "dial"
	cfg.ReconcileInterval = agent.Duration{}
	cfg.StateDir = filepath.Join(dir, "state")
	return cfg
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAgentProbesAndKillsEndToEnd(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cri := &fakeCRI{}
	serveCRI(t, filepath.Join(dir, "cri.sock"), cri)

	a, err := agent.New(testConfig(dir), agent.WithLogger(zap.NewNop()),
		agent.WithEngineOptions(prober.WithJitter(func() float64 { return 0 })),
		agent.WithPluginOptions(plugin.WithBackoff(10*time.Millisecond, 50*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	<-a.Started()
	base := "http://" + a.MetricsAddr()
	if code, body := get(t, base+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("healthz without a runtime = %d %q, want 503", code, body)
	}

	rt := startNRI(t, dir)
	testutil.WaitFor(t, "healthz 200", func() bool { code, _ := get(t, base+"/healthz"); return code == http.StatusOK })
	testutil.WaitFor(t, "Synchronize", func() bool { return a.Plugin().Connected() && synced(t, a) })

	pod := &nri.PodSandbox{Id: "sb1", Uid: "uid1", Name: "web", Namespace: "default", Ips: []string{"10.88.0.9"},
		Annotations: map[string]string{probespec.AnnotationProbes: `{"app": {
			"livenessProbe": {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1, "terminationGracePeriodSeconds": 7},
			"readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}}`}}
	ctr := &nri.Container{Id: "c1", PodSandboxId: "sb1", Name: "app", State: nri.ContainerState_CONTAINER_RUNNING,
		CreatedAt: time.Now().UnixNano(), StartedAt: time.Now().UnixNano(), Pid: 99}
	runtimeOp(t, rt, func(ctx context.Context) error { return rt.RunPodSandbox(ctx, &nri.RunPodSandboxRequest{Pod: pod}) })
	runtimeOp(t, rt, func(ctx context.Context) error {
		return rt.PostStartContainer(ctx, &nri.PostStartContainerRequest{Pod: pod, Container: ctr})
	})

	testutil.WaitFor(t, "liveness kill", func() bool { return len(cri.stopped()) > 0 })
	if s := cri.stopped()[0]; s.ContainerId != "c1" || s.Timeout != 7 {
		t.Errorf("StopContainer%v, want c1 with the probe's grace period 7", s)
	}
	testutil.WaitFor(t, "ready", func() bool { st, ok := a.Engine().Container("c1"); return ok && st.Ready })
	_, metrics := get(t, base+"/metrics")
	for _, m := range []string{"probelet_lifecycle_event_to_worker_seconds_count", "prober_probe_total", "probelet_nri_connected 1",
		`probelet_kill_guard_state{state="Normal"} 1`, "probelet_kill_queue_length 0"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}

	stopAt := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		t.Logf("shut down in %s", time.Since(stopAt).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if code, _ := get(t, base+"/healthz"); code != 0 {
		t.Errorf("metrics endpoint still up after shutdown (%d)", code)
	}
}

func TestAgentFailsOnBusyMetricsPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := testConfig(t.TempDir())
	cfg.MetricsBindAddress = l.Addr().String()
	a, err := agent.New(cfg, agent.WithLogger(zap.NewNop()))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "--metrics-bind-address") {
		t.Fatalf("Run = %v, want the bind error", err)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	cfg := agent.Default()
	cfg.TCPMode = "magic"
	if _, err := agent.New(cfg); err == nil {
		t.Fatal("invalid config accepted")
	}
}

// runtimeOp runs one runtime operation the way containerd does: not
// while a plugin is being synchronized.
func runtimeOp(t *testing.T, rt *nri.Adaptation, op func(context.Context) error) {
	t.Helper()
	b := rt.BlockPluginSync()
	defer b.Unblock()
	if err := op(context.Background()); err != nil {
		t.Fatalf("runtime operation failed: %v", err)
	}
}

func synced(t *testing.T, a *agent.Agent) bool {
	mfs, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "probelet_nri_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if fmt.Sprint(m.GetLabel()[0].GetValue()) == "Synchronize" && m.GetCounter().GetValue() > 0 {
				return true
			}
		}
	}
	return false
}

func TestAgentAsLaunchedPlugin(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	serveCRI(t, filepath.Join(dir, "cri.sock"), &fakeCRI{})
	rt := startNRI(t, dir)
	// What containerd hands a pre-installed plugin: a connected socket,
	// index and name in the environment, no flags.
	conn, err := net.Dial("unix", filepath.Join(dir, "nri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := conn.(*net.UnixConn).File()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NRI_PLUGIN_SOCKET", strconv.Itoa(fd))
	t.Setenv("NRI_PLUGIN_IDX", "10")
	t.Setenv("NRI_PLUGIN_NAME", "probelet")

	cfg := testConfig(dir)
	cfg.NRISocket = "/nonexistent/nri.sock" // ignored: the socket is inherited
	var logs strings.Builder
	a, err := agent.New(cfg, agent.AsLaunchedPlugin(), agent.WithLogOutput(&syncWriter{w: &logs}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Started():
	case err := <-done:
		t.Fatalf("Run = %v before starting", err)
	}
	testutil.WaitFor(t, "Synchronize", func() bool { return synced(t, a) })
	pod := &nri.PodSandbox{Id: "sb1", Uid: "uid1", Name: "web", Namespace: "default"}
	runtimeOp(t, rt, func(ctx context.Context) error { return rt.RunPodSandbox(ctx, &nri.RunPodSandboxRequest{Pod: pod}) })
	if n := len(a.Cache().Pods()); n != 1 {
		t.Errorf("cache has %d pods, want 1", n)
	}
	if code, _ := get(t, "http://"+a.MetricsAddr()+"/healthz"); code != http.StatusOK {
		t.Errorf("healthz = %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// syncWriter serializes writes from the agent's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestLaunchedPluginAnswersConfigureBeforeASlowBuild launches probelet as
// containerd does, with an eBPF load (the TCP prober's builder) that takes
// well past the 2 s the runtime gives Configure: the registration must go
// through at once, and the pod Synchronize brought and the container
// started meanwhile are probed once the build is done.
func TestLaunchedPluginAnswersConfigureBeforeASlowBuild(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	serveCRI(t, filepath.Join(dir, "cri.sock"), &fakeCRI{})
	pod := &nri.PodSandbox{Id: "sb1", Uid: "uid1", Name: "web", Namespace: "default",
		Annotations: map[string]string{probespec.AnnotationProbes: `{
			"app":  {"readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}},
			"side": {"readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}}`}}
	running := func(id, name string) *nri.Container {
		return &nri.Container{Id: id, PodSandboxId: "sb1", Name: name, State: nri.ContainerState_CONTAINER_RUNNING,
			CreatedAt: time.Now().UnixNano(), StartedAt: time.Now().UnixNano(), Pid: 99}
	}
	syncFn := func(ctx context.Context, cb nri.SyncCB) error {
		_, err := cb(ctx, []*nri.PodSandbox{pod}, []*nri.Container{running("c1", "app")})
		return err
	}
	update := func(context.Context, []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) { return nil, nil }
	rt, err := nri.New("fake-containerd", "v2.4.2", syncFn, update, // NRI's default 2 s request timeout
		nri.WithSocketPath(filepath.Join(dir, "nri.sock")),
		nri.WithPluginPath(filepath.Join(dir, "plugins")), nri.WithPluginConfigPath(filepath.Join(dir, "conf.d")))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Stop)
	inheritNRIConnection(t, filepath.Join(dir, "nri.sock"))

	slowLoad, loading, release := heldTCPLoad()
	cfg := testConfig(dir)
	cfg.NRISocket = "/nonexistent/nri.sock" // ignored: the socket is inherited
	var logs strings.Builder
	a, err := agent.New(cfg, agent.AsLaunchedPlugin(), agent.WithTCPProber(slowLoad),
		agent.WithLogOutput(&syncWriter{w: &logs}), agent.WithEngineOptions(prober.WithJitter(func() float64 { return 0 })))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()

	var began time.Time
	select {
	case began = <-loading:
	case err := <-done:
		done <- err
		t.Fatalf("Run = %v before building", err)
	}
	// The plugin's own count of the runtime's Synchronize: registered,
	// configured and synchronized while the build waits.
	testutil.WaitFor(t, "Synchronize during the build", func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("Run = %v while building: the runtime gave up on Configure", err)
		default:
		}
		return synced(t, a)
	})
	t.Logf("registered and synchronized %s into the build", time.Since(began).Round(time.Millisecond))
	runtimeOp(t, rt, func(ctx context.Context) error {
		return rt.PostStartContainer(ctx, &nri.PostStartContainerRequest{Pod: pod, Container: running("c2", "side")})
	})
	// The load is slow for real: it ends well past the runtime's 2 s
	// Configure deadline, which the registration above met.
	<-time.After(time.Until(began.Add(3 * time.Second)))
	close(release)

	<-a.Started()
	for _, id := range []string{"c1", "c2"} {
		testutil.WaitFor(t, id+" probed ready", func() bool { st, ok := a.Engine().Container(id); return ok && st.Ready })
	}
	if n := len(a.Cache().Pods()); n != 1 {
		t.Errorf("cache has %d pods, want the one Synchronize brought", n)
	}
}

// heldTCPLoad is a TCP prober load that reports when it began on loading
// and ends (with the kubelet-style dialer) when release is closed.
func heldTCPLoad() (load agent.TCPProberFunc, loading <-chan time.Time, release chan struct{}) {
	began := make(chan time.Time, 1)
	release = make(chan struct{})
	load = func(ctx context.Context, _ string, _ bool, _ *zap.Logger, _ prometheus.Registerer) (probe.TCPProber, error) {
		began <- time.Now()
		select {
		case <-release:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return load, began, release
}

// inheritNRIConnection is what containerd hands a plugin it launches: a
// connected socket, index and name in the environment, no flags.
func inheritNRIConnection(t *testing.T, socket string) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	f, err := conn.(*net.UnixConn).File()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NRI_PLUGIN_SOCKET", strconv.Itoa(fd))
	t.Setenv("NRI_PLUGIN_IDX", "10")
	t.Setenv("NRI_PLUGIN_NAME", "probelet")
}

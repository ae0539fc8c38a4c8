package plugin_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/plugin"
	"github.com/probelet/probelet/probespec"
)

type harness struct {
	rt     *fakeRuntime
	sink   *recordingSink
	cache  *lifecycle.Cache
	plugin *plugin.Plugin
	reg    *prometheus.Registry
	done   chan error
	cancel context.CancelFunc
}

// start connects a plugin feeding a real cache to a fresh in-process
// runtime and waits for the first Synchronize.
func start(t *testing.T, rt *fakeRuntime, cache plugin.Cache) *harness {
	t.Helper()
	h := &harness{rt: rt, sink: newRecordingSink(), reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	if cache == nil {
		c, err := lifecycle.New(h.sink)
		if err != nil {
			t.Fatal(err)
		}
		h.cache, cache = c, c
	}
	p, err := plugin.New(cache, plugin.WithSocketPath(rt.socket), plugin.WithRegisterer(h.reg),
		plugin.WithBackoff(10*time.Millisecond, 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	h.plugin = p
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- p.Run(ctx) }()
	t.Cleanup(h.stop)
	testutil.WaitFor(t, "registration", p.Connected)
	// Synchronize runs while the runtime holds back other operations
	// until the plugin is fully registered (see fakeRuntime.do).
	testutil.WaitFor(t, "first Synchronize", func() bool {
		return testutil.Metric(t, h.reg, "probelet_nri_events_total", map[string]string{"event": "Synchronize"}) >= 1
	})
	return h
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
	h.done <- nil // let a second stop return
}

func TestLifecycleReachesTheEngine(t *testing.T) {
	rt := newFakeRuntime(t)
	h := start(t, rt, nil)
	events, cancel := h.cache.SubscribeEvents(32)
	defer cancel()
	p, c := pod("sb1", "uid1", "{}"), container("c1", "sb1", "web")

	steps := []struct {
		name    string
		do      func() error
		present bool
		states  map[string]node.ContainerState
		event   node.EventType
	}{
		{"RunPodSandbox", func() error { return rt.runPod(p) }, true, map[string]node.ContainerState{}, -1},
		{"create and start", func() error { return rt.startContainer(p, c) }, true,
			map[string]node.ContainerState{"c1": node.StateRunning}, node.ContainerStartedEvent},
		{"StopContainer", func() error { return rt.stopContainer(p, c, 137) }, true,
			map[string]node.ContainerState{"c1": node.StateExited}, node.ContainerStoppedEvent},
		{"RemoveContainer", func() error { return rt.removeContainer(p, c) }, true,
			map[string]node.ContainerState{}, node.ContainerDeletedEvent},
		{"StopPodSandbox", func() error { return rt.stopPod(p) }, true, map[string]node.ContainerState{}, -1},
		{"RemovePodSandbox", func() error { return rt.removePod(p) }, false, nil, -1},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s failed the runtime operation: %v", s.name, err)
		}
		got, ok := h.sink.pod("uid1")
		if ok != s.present {
			t.Fatalf("after %s: pod in engine = %v, want %v", s.name, ok, s.present)
		}
		if !ok {
			continue
		}
		if st := h.sink.containerStates("uid1"); !reflect.DeepEqual(st, s.states) {
			t.Errorf("after %s: containers = %v, want %v", s.name, st, s.states)
		}
		if s.name == "StopPodSandbox" && !got.Deleting {
			t.Error("StopPodSandbox did not mark the pod deleting")
		}
		if s.event >= 0 && !sawEvent(events, s.event) {
			t.Errorf("after %s: no %s event", s.name, s.event)
		}
	}
	if v := testutil.Metric(t, h.reg, "probelet_nri_events_total", map[string]string{"event": "PostStartContainer"}); v != 1 {
		t.Errorf("PostStartContainer events = %v, want 1", v)
	}
}

func TestTranslatesPodAndContainerFields(t *testing.T) {
	rt := newFakeRuntime(t)
	h := start(t, rt, nil)
	p, c := pod("sb1", "uid1", "{}"), container("c1", "sb1", "web")
	if err := rt.runPod(p); err != nil {
		t.Fatal(err)
	}
	if err := rt.startContainer(p, c); err != nil {
		t.Fatal(err)
	}
	got, _ := h.sink.pod("uid1")
	if got.Name != "web-uid1" || got.Namespace != "default" || got.SandboxID != "sb1" ||
		got.IPs[0] != "10.88.0.5" || got.NetNSPath != "/run/netns/cni-1" || got.Labels["app"] != "web" || got.Annotations[probespec.AnnotationProbes] != "{}" ||
		got.CreatedAt.IsZero() {
		t.Errorf("pod = %+v", got)
	}
	ct := got.Containers[0]
	if ct.Name != "web" || ct.Pid != 4242 || ct.Image != "busybox:latest" ||
		ct.StartedAt.IsZero() || ct.CreatedAt.IsZero() || ct.Annotations[probespec.AnnotationContainerPorts] == "" {
		t.Errorf("container = %+v", ct)
	}
}

func TestMalformedAnnotationNeverFailsTheOperation(t *testing.T) {
	rt := newFakeRuntime(t)
	h := start(t, rt, nil)
	p, c := pod("sb1", "uid1", "bad"), container("c1", "sb1", "web")
	if err := rt.runPod(p); err != nil {
		t.Fatalf("RunPodSandbox failed: %v", err)
	}
	if err := rt.startContainer(p, c); err != nil {
		t.Fatalf("container start failed: %v", err)
	}
	got, _ := h.sink.pod("uid1")
	// The engine reports the bad spec (prober tests); here it only passes through.
	if got.Annotations[probespec.AnnotationProbes] != "bad" || got.Containers[0].State != node.StateRunning {
		t.Fatalf("annotation not handed on or container not running: %+v", got)
	}
	// Events the cache cannot key (no IDs) are ignored, not failed.
	if err := rt.runPod(&nri.PodSandbox{}); err != nil {
		t.Fatalf("RunPodSandbox of an empty pod failed: %v", err)
	}
}

// panickyCache fails every call the worst way.
type panickyCache struct{ plugin.Cache }

func (panickyCache) RunPod(time.Time, lifecycle.Sandbox)                        { panic("boom") }
func (panickyCache) Sync(time.Time, []lifecycle.Sandbox, []lifecycle.Container) {}

func TestHandlerPanicIsContained(t *testing.T) {
	rt := newFakeRuntime(t)
	h := start(t, rt, panickyCache{})
	if err := rt.runPod(pod("sb1", "uid1", "")); err != nil {
		t.Fatalf("a panicking handler failed the runtime operation: %v", err)
	}
	if v := testutil.Metric(t, h.reg, "probelet_nri_handler_panics_total", nil); v != 1 {
		t.Errorf("panics = %v, want 1", v)
	}
	if !h.plugin.Connected() {
		t.Error("plugin lost its registration")
	}
}

func TestReconnectsAndReconciles(t *testing.T) {
	rt := newFakeRuntime(t)
	h := start(t, rt, nil)
	p1, p2 := pod("sb1", "uid1", "{}"), pod("sb2", "uid2", "{}")
	a, b := container("a", "sb1", "web"), container("b", "sb1", "side")
	for _, err := range []error{rt.runPod(p1), rt.runPod(p2), rt.startContainer(p1, a), rt.startContainer(p1, b)} {
		if err != nil {
			t.Fatal(err)
		}
	}

	rt.stop() // containerd restarts
	testutil.WaitFor(t, "disconnect", func() bool { return !h.plugin.Connected() })
	// While it was down: b and pod 2 went away (no events), c started.
	rt.mu.Lock()
	delete(rt.ctrs, "b")
	delete(rt.pods, "sb2")
	c := container("c", "sb1", "init")
	c.State = nri.ContainerState_CONTAINER_RUNNING
	rt.ctrs["c"] = c
	rt.mu.Unlock()

	back := time.Now()
	rt.start()
	testutil.WaitFor(t, "reconnect", h.plugin.Connected)
	testutil.WaitFor(t, "Synchronize after reconnect", func() bool { return h.sink.syncCount() >= 2 })
	t.Logf("re-registered and synchronized %s after the runtime came back", time.Since(back).Round(time.Millisecond))
	if d := time.Since(back); d > 2*time.Second {
		t.Errorf("reconnect took %s, want <= 2s", d)
	}
	want := map[string]node.ContainerState{"a": node.StateRunning, "c": node.StateRunning}
	if got := h.sink.containerStates("uid1"); !reflect.DeepEqual(got, want) {
		t.Errorf("after reconcile: %v, want %v", got, want)
	}
	if _, ok := h.sink.pod("uid2"); ok {
		t.Error("vanished pod uid2 still in the engine")
	}
	if v := testutil.Metric(t, h.reg, "probelet_nri_connection_losses_total", nil); v != 1 {
		t.Errorf("connection losses = %v, want 1", v)
	}
	// Events flow on the new connection.
	if err := rt.stopContainer(p1, a, 0); err != nil {
		t.Fatal(err)
	}
	if got := h.sink.containerStates("uid1")["a"]; got != node.StateExited {
		t.Errorf("after reconnect, StopContainer gave state %v", got)
	}
}

func TestRunUnregistersOnCancel(t *testing.T) {
	rt := newFakeRuntime(t)
	h := start(t, rt, nil)
	h.cancel()
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if h.plugin.Connected() {
		t.Error("still connected after Run returned")
	}
	// The runtime goes on without the plugin.
	if err := rt.runPod(pod("sb9", "uid9", "")); err != nil {
		t.Fatalf("runtime operation after the plugin left: %v", err)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	cache := panickyCache{}
	tests := []struct {
		name string
		opt  plugin.Option
	}{
		{"index not two digits", plugin.WithIndex("7")},
		{"index not digits", plugin.WithIndex("ab")},
		{"empty socket", plugin.WithSocketPath("")},
		{"empty name", plugin.WithName("")},
		{"name the runtime refuses", plugin.WithName("probe let/1")},
		{"backoff max below min", plugin.WithBackoff(time.Second, time.Millisecond)},
		{"nil clock", plugin.WithClock(nil)},
		{"nil logger", plugin.WithLogger(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := plugin.New(cache, tt.opt); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := plugin.New(nil); err == nil {
		t.Error("nil cache accepted")
	}
	if _, err := plugin.New(cache, plugin.WithIndex("05"), plugin.WithName("probelet")); err != nil {
		t.Errorf("valid options rejected: %v", err)
	}
}

func sawEvent(ch <-chan node.Event, want node.EventType) bool {
	for {
		select {
		case ev := <-ch:
			if ev.Type == want {
				return true
			}
		default:
			return false
		}
	}
}

package proxy_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/cri/proxy"
	itu "github.com/probelet/probelet/internal/testutil"
)

var running = runtimeapi.ContainerState_CONTAINER_RUNNING

func listContainers(t *testing.T, h *harness, f *runtimeapi.ContainerFilter) *runtimeapi.ListContainersResponse {
	t.Helper()
	resp, err := h.cli.ListContainers(ctxT(t), &runtimeapi.ListContainersRequest{Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestMemoServesRepeatedReads: the second identical read is the runtime's
// first answer from memory; a different filter or verbose flag is another
// request and asks the runtime.
func TestMemoServesRepeatedReads(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	rt.addPod("sb2", "c2", runtimeapi.ContainerState_CONTAINER_EXITED)
	h := startProxy(t, rt)
	h.waitLive(t)

	// The baseline listing asked with the kubelet's request (an empty
	// filter), so the kubelet's first relist is already in the memo.
	base := rt.count("ListContainers")
	all := &runtimeapi.ContainerFilter{}
	first := listContainers(t, h, all)
	second := listContainers(t, h, all)
	if !proto.Equal(first, second) {
		t.Errorf("memo answer %v differs from the runtime's %v", second, first)
	}
	if n := rt.count("ListContainers") - base; n != 0 {
		t.Errorf("runtime answered %d ListContainers, want 0", n)
	}
	byLabel := listContainers(t, h, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"app": "sb2"}})
	if len(byLabel.GetContainers()) != 1 || byLabel.GetContainers()[0].GetId() != "c2" {
		t.Errorf("label selector answered %v, want c2 only", byLabel)
	}
	byState := listContainers(t, h, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: running}})
	if len(byState.GetContainers()) != 1 || byState.GetContainers()[0].GetId() != "c1" {
		t.Errorf("state filter answered %v, want c1 only", byState)
	}
	if n := rt.count("ListContainers") - base; n != 2 {
		t.Errorf("runtime answered %d ListContainers, want 2 (one per new request)", n)
	}

	for _, verbose := range []bool{false, true, false, true} {
		resp, err := h.cli.PodSandboxStatus(ctxT(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "sb1", Verbose: verbose})
		if err != nil {
			t.Fatal(err)
		}
		if (len(resp.GetInfo()) > 0) != verbose {
			t.Errorf("verbose=%v answered info %v", verbose, resp.GetInfo())
		}
	}
	if n := rt.count("PodSandboxStatus"); n != 2 {
		t.Errorf("runtime answered %d PodSandboxStatus, want 2 (verbose and not)", n)
	}
	if hits := h.counter("probelet_cri_proxy_calls_total", "served", "memo"); hits != 4 {
		t.Errorf("memo hits = %v, want 4", hits)
	}
}

// TestMemoKeepsNoSandboxBeforeItsNetworkTeardown: containerd clears a
// stopped sandbox's address when its network teardown ends, with no event;
// until then (NOTREADY with an address) its status is read anew each time.
func TestMemoKeepsNoSandboxBeforeItsNetworkTeardown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state runtimeapi.PodSandboxState
		ip    string
		reads int // the runtime's answers to three reads
	}{
		{"ready", runtimeapi.PodSandboxState_SANDBOX_READY, "10.0.0.2", 1},
		{"stopped, network not torn down yet", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, "10.0.0.2", 3},
		{"stopped, network torn down", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := startFakeRuntime(t)
			rt.addPod("sb1", "c1", running)
			rt.setSandbox("sb1", tc.state, tc.ip)
			h := startProxy(t, rt)
			h.waitLive(t)
			base := rt.count("PodSandboxStatus")
			for range 3 {
				resp, err := h.cli.PodSandboxStatus(ctxT(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "sb1"})
				if err != nil || resp.GetStatus().GetNetwork().GetIp() != tc.ip {
					t.Fatalf("PodSandboxStatus = %v, %v, want address %q", resp, err, tc.ip)
				}
			}
			if n := rt.count("PodSandboxStatus") - base; n != tc.reads {
				t.Errorf("runtime answered %d of 3 reads, want %d", n, tc.reads)
			}
		})
	}
}

// TestMemoDropsOnChanges: an event on the runtime's stream, a mutating
// call and an error each make the next read ask the runtime.
func TestMemoDropsOnChanges(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	h := startProxy(t, rt)
	h.waitLive(t)
	status := func() runtimeapi.ContainerState {
		resp, err := h.cli.ContainerStatus(ctxT(t), &runtimeapi.ContainerStatusRequest{ContainerId: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetStatus().GetState()
	}
	status()
	calls := func() int { return rt.count("ContainerStatus") }
	before := calls()
	status()
	if calls() != before {
		t.Fatal("the second read was not served from the memo")
	}

	// The runtime records an exit and then announces it.
	rt.setState("c1", runtimeapi.ContainerState_CONTAINER_EXITED)
	invalidations := h.counter("probelet_cri_proxy_invalidations_total", "source", "runtime_event")
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c1", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT,
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{Id: "sb1"}})
	waitCounter(t, h, "probelet_cri_proxy_invalidations_total", invalidations+1, "source", "runtime_event")
	if got := status(); got != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("after the runtime's event: %v, want EXITED", got)
	}

	// A mutating call through the proxy.
	rt.setState("c1", running)
	status() // stale on purpose: no event told the proxy
	if _, err := h.cli.StopContainer(ctxT(t), &runtimeapi.StopContainerRequest{ContainerId: "c1"}); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("after StopContainer through the proxy: %v, want EXITED", got)
	}

	// A failed read drops the lists (NotFound) or everything.
	for _, fail := range []string{"NotFound", "Unavailable"} {
		listContainers(t, h, nil)
		n, m := rt.count("ListContainers"), rt.count("ContainerStatus")
		if fail == "Unavailable" {
			rt.mu.Lock()
			rt.failNext["ContainerStatus"] = errUnavailable
			rt.mu.Unlock()
		}
		if _, err := h.cli.ContainerStatus(ctxT(t), &runtimeapi.ContainerStatusRequest{ContainerId: "nope"}); err == nil {
			t.Fatal("no error")
		}
		listContainers(t, h, nil)
		if rt.count("ListContainers") != n+1 {
			t.Errorf("a list was served from the memo after a read failed with %s", fail)
		}
		status()
		if cached := rt.count("ContainerStatus") == m+1; cached != (fail == "NotFound") {
			t.Errorf("after %s: c1's status served from the memo = %v", fail, cached)
		}
	}
}

// TestMemoDoesNotKeepAnswersFromBeforeAChange: a read in flight while a
// change is announced is answered (it is what the runtime said) but not
// kept, so the next read asks the runtime again.
func TestMemoDoesNotKeepAnswersFromBeforeAChange(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	h := startProxy(t, rt)
	h.waitLive(t)
	release := make(chan struct{})
	rt.mu.Lock()
	rt.block["ListContainers"] = release
	rt.mu.Unlock()
	done := make(chan *runtimeapi.ListContainersResponse, 1)
	go func() {
		resp, _ := h.cli.ListContainers(ctxT(t), &runtimeapi.ListContainersRequest{})
		done <- resp
	}()
	<-rt.entered // the runtime has read its store: c1 running
	rt.setState("c1", runtimeapi.ContainerState_CONTAINER_EXITED)
	inv := h.counter("probelet_cri_proxy_invalidations_total", "source", "runtime_event")
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c1", PodSandboxStatus: &runtimeapi.PodSandboxStatus{Id: "sb1"}})
	waitCounter(t, h, "probelet_cri_proxy_invalidations_total", inv+1, "source", "runtime_event")
	close(release)
	if got := (<-done).GetContainers()[0].GetState(); got != running {
		t.Fatalf("in-flight read answered %v, want the runtime's RUNNING", got)
	}
	if got := listContainers(t, h, nil).GetContainers()[0].GetState(); got != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("next read answered %v, want EXITED (the in-flight answer must not be kept)", got)
	}
}

// TestMemoKeepsNothingWithoutTheRuntimeStream: while the runtime's event
// stream is down every read asks the runtime. The stream's first opening
// fails and the proxy waits out its back-off on a fake clock, so it stays
// down until the test steps the clock; then the memo serves again.
func TestMemoKeepsNothingWithoutTheRuntimeStream(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	rt.mu.Lock()
	rt.failNext["GetContainerEvents"] = errUnavailable
	rt.mu.Unlock()
	clk := clocktesting.NewFakeClock(time.Now())
	h := startProxy(t, rt, proxy.WithClock(clk))
	itu.WaitFor(t, "the proxy to wait before reopening the stream", func() bool {
		return rt.count("GetContainerEvents") == 1 && clk.HasWaiters() &&
			h.gauge("probelet_cri_proxy_runtime_events_connected") == 0
	})
	for range 3 {
		listContainers(t, h, nil)
	}
	if hits := h.counter("probelet_cri_proxy_calls_total", "served", "memo"); hits != 0 {
		t.Errorf("memo served %v reads without the runtime's event stream", hits)
	}

	clk.Step(2 * time.Second) // past the longest first back-off
	h.waitLive(t)
	for range 2 {
		listContainers(t, h, nil)
	}
	if hits := h.counter("probelet_cri_proxy_calls_total", "served", "memo"); hits == 0 {
		t.Error("memo served nothing with the stream back")
	}
}

// TestMemoAnswersExpire: an answer no change dropped is served for the
// max age at most.
func TestMemoAnswersExpire(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	clk := clocktesting.NewFakeClock(time.Now())
	h := startProxy(t, rt, proxy.WithClock(clk), proxy.WithMaxAge(10*time.Second))
	h.waitLive(t)
	listContainers(t, h, nil)
	n := rt.count("ListContainers")
	clk.Step(9 * time.Second)
	listContainers(t, h, nil)
	if rt.count("ListContainers") != n {
		t.Fatal("an answer younger than the max age was not served from the memo")
	}
	clk.Step(time.Second)
	listContainers(t, h, nil)
	if rt.count("ListContainers") != n+1 {
		t.Error("an answer as old as the max age was served from the memo")
	}
}

// TestUnknownMethodsInvalidate: a method this build does not know may
// change anything, so it drops the memo like a mutating call.
func TestUnknownMethodsInvalidate(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	h := startProxy(t, rt)
	h.waitLive(t)
	listContainers(t, h, nil)
	n := rt.count("ListContainers")
	var out wrapperspb.StringValue
	if err := h.conn.Invoke(ctxT(t), "/runtime.v1.RuntimeService/FutureMutation", wrapperspb.String("x"), &out); err != nil {
		t.Fatal(err)
	}
	listContainers(t, h, nil)
	if rt.count("ListContainers") != n+1 {
		t.Error("the memo survived an unknown method")
	}
	// A read-only method does not drop it.
	if _, err := h.cli.Version(ctxT(t), &runtimeapi.VersionRequest{}); err != nil {
		t.Fatal(err)
	}
	listContainers(t, h, nil)
	if rt.count("ListContainers") != n+1 {
		t.Error("Version dropped the memo")
	}
}

// TestMemoStaysOffWhileTheRuntimeEndsItsStreamAtOnce: CRI-O without
// enable_pod_events answers GetContainerEvents with a stream that ends at
// once. Every read is forwarded, and the stream is asked for again every
// 30 s, not at the reconnect pace of a runtime that went away.
func TestMemoStaysOffWhileTheRuntimeEndsItsStreamAtOnce(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	rt.mu.Lock()
	rt.endStreams = true
	rt.mu.Unlock()
	clk := clocktesting.NewFakeClock(time.Now())
	h := startProxy(t, rt, proxy.WithClock(clk))
	itu.WaitFor(t, "the proxy to wait after the stream ended", func() bool {
		return rt.count("GetContainerEvents") == 1 && clk.HasWaiters() &&
			h.counter("probelet_cri_proxy_invalidations_total", "source", "runtime_stream") == 1
	})
	for range 3 {
		listContainers(t, h, nil)
	}
	if n := rt.count("ListContainers"); n < 3 {
		t.Errorf("runtime answered %d of 3 reads", n)
	}
	clk.Step(29 * time.Second)
	for range 3 {
		listContainers(t, h, nil)
	}
	if n := rt.count("GetContainerEvents"); n != 1 {
		t.Errorf("the stream was asked for %d times within 29 s, want once", n)
	}
	clk.Step(time.Second)
	itu.WaitFor(t, "the stream asked for again after 30 s", func() bool { return rt.count("GetContainerEvents") == 2 })
}

// TestMemoStaysOffWithoutARuntimeEventStream: a runtime that does not
// implement GetContainerEvents gets every call forwarded, nothing cached.
func TestMemoStaysOffWithoutARuntimeEventStream(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	rt.mu.Lock()
	rt.failNext["GetContainerEvents"] = status.Error(codes.Unimplemented, "unknown method GetContainerEvents")
	rt.mu.Unlock()
	h := startProxy(t, rt)
	// The stream opens before the runtime refuses it on the first read:
	// wait for the proxy to have read the refusal, not only asked.
	itu.WaitFor(t, "the proxy to read the runtime's refusal of its event stream", func() bool {
		return h.counter("probelet_cri_proxy_invalidations_total", "source", "runtime_stream") == 1
	})
	for range 3 {
		listContainers(t, h, nil)
	}
	if n := rt.count("ListContainers"); n < 3 {
		t.Errorf("runtime answered %d of 3 reads", n)
	}
	if n := rt.count("GetContainerEvents"); n != 1 {
		t.Errorf("the proxy asked for the event stream %d times, want once", n)
	}
}

package proxy_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	itu "github.com/probelet/probelet/internal/testutil"
)

type eventStream interface {
	Recv() (*runtimeapi.ContainerEventResponse, error)
}

// subscribe opens the kubelet's event stream and waits until the proxy
// serves it.
func subscribe(t *testing.T, h *harness) eventStream {
	t.Helper()
	stream, err := h.cli.GetContainerEvents(ctxT(t), &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	itu.WaitFor(t, "the stream to be subscribed", func() bool { return h.gauge("probelet_cri_proxy_event_streams") == 1 })
	return stream
}

// recvEvents reads n events, failing after the wait limit.
func recvEvents(t *testing.T, s eventStream, n int) []*runtimeapi.ContainerEventResponse {
	t.Helper()
	out := make(chan *runtimeapi.ContainerEventResponse, n)
	errc := make(chan error, 1)
	go func() {
		for range n {
			ev, err := s.Recv()
			if err != nil {
				errc <- err
				return
			}
			out <- ev
		}
	}()
	var evs []*runtimeapi.ContainerEventResponse
	timeout := time.After(10 * time.Second)
	for len(evs) < n {
		select {
		case ev := <-out:
			evs = append(evs, ev)
		case err := <-errc:
			t.Fatalf("event stream ended after %d of %d events: %v", len(evs), n, err)
		case <-timeout:
			t.Fatalf("got %d of %d events in 10s: %v", len(evs), n, evs)
		}
	}
	return evs
}

type seenEvent struct {
	id  string
	typ runtimeapi.ContainerEventType
}

func checkEvents(t *testing.T, got []*runtimeapi.ContainerEventResponse, want ...seenEvent) {
	t.Helper()
	for i, ev := range got {
		if i >= len(want) || ev.GetContainerId() != want[i].id || ev.GetContainerEventType() != want[i].typ {
			t.Errorf("event %d = %s %v, want %v", i, ev.GetContainerId(), ev.GetContainerEventType(), want)
			continue
		}
		if ev.GetPodSandboxStatus().GetMetadata().GetUid() == "" {
			t.Errorf("event %d has no sandbox status with a pod UID (the kubelet drops such events): %v", i, ev)
		}
	}
}

const (
	evCreated = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
	evStarted = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	evStopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	evDeleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
)

// TestEventsCarryWhatTheRuntimeRecorded: the stopped event reaches the
// kubelet with containerd's own status of the container (EXITED), and the
// relist it triggers reads the exit from the memo.
func TestEventsCarryWhatTheRuntimeRecorded(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	h := startProxy(t, rt)
	h.waitLive(t)
	stream := subscribe(t, h)

	rt.setState("c1", runtimeapi.ContainerState_CONTAINER_EXITED)
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c1", ContainerEventType: evStopped, PodSandboxStatus: &runtimeapi.PodSandboxStatus{Id: "sb1"}})
	evs := recvEvents(t, stream, 1)
	checkEvents(t, evs, seenEvent{"c1", evStopped})
	cs := evs[0].GetContainersStatuses()
	if len(cs) != 1 || cs[0].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("event's container statuses = %v, want c1 EXITED", cs)
	}
	// The relist the kubelet makes now reads the exit, from the memo.
	resp, err := h.cli.ContainerStatus(ctxT(t), &runtimeapi.ContainerStatusRequest{ContainerId: "c1"})
	if err != nil || resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("ContainerStatus after the event = %v, %v", resp, err)
	}
}

// TestEventsSurviveARuntimeRestart: the kubelet's stream stays open while
// containerd is down, and what changed meanwhile is announced once it is
// back: an exit, a removal, a new pod.
func TestEventsSurviveARuntimeRestart(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	rt.addPod("sb2", "c2", runtimeapi.ContainerState_CONTAINER_EXITED)
	h := startProxy(t, rt)
	h.waitLive(t)
	stream := subscribe(t, h)

	rt.stop()
	itu.WaitFor(t, "the proxy to see the runtime gone", func() bool { return h.gauge("probelet_cri_proxy_runtime_events_connected") == 0 })
	rt.setState("c1", runtimeapi.ContainerState_CONTAINER_EXITED)
	rt.remove("c2")
	rt.addPod("sb3", "c3", running)
	resyncs := h.counter("probelet_cri_proxy_resyncs_total")
	rt.start()
	waitCounter(t, h, "probelet_cri_proxy_resyncs_total", resyncs+1)

	// Sandboxes first (a new one before its containers), then
	// containers, each in ID order.
	checkEvents(t, recvEvents(t, stream, 6),
		seenEvent{"sb3", evCreated}, seenEvent{"sb3", evStarted},
		seenEvent{"c1", evStopped}, seenEvent{"c2", evDeleted},
		seenEvent{"c3", evCreated}, seenEvent{"c3", evStarted})
	if n := h.gauge("probelet_cri_proxy_event_streams"); n != 1 {
		t.Errorf("%v streams open, want the same one", n)
	}
}

// TestSandboxRemovalIsConfirmedBeforeTheMemoKeepsAnswers: containerd 2.x
// announces a sandbox's removal (CONTAINER_DELETED), then calls NRI, and
// only then drops the sandbox from its store. A relist in between still
// reads the sandbox; the memo must not keep that answer, or it would serve
// a removed sandbox for as long as nothing else about it changes. The
// kubelet hears of the removal once containerd no longer shows it.
func TestSandboxRemovalIsConfirmedBeforeTheMemoKeepsAnswers(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	h := startProxy(t, rt)
	h.waitLive(t)
	stream := subscribe(t, h)

	rt.remove("c1")
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c1", ContainerEventType: evDeleted, PodSandboxStatus: &runtimeapi.PodSandboxStatus{Id: "sb1"}})
	heard := h.counter("probelet_cri_proxy_invalidations_total", "source", "runtime_event")
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "sb1", ContainerEventType: evDeleted, PodSandboxStatus: &runtimeapi.PodSandboxStatus{Id: "sb1"}})
	waitCounter(t, h, "probelet_cri_proxy_invalidations_total", heard+1, "source", "runtime_event")

	// The kubelet relists in the window: containerd still shows sb1.
	for range 2 {
		if _, err := h.cli.PodSandboxStatus(ctxT(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "sb1"}); err != nil {
			t.Fatalf("PodSandboxStatus in the window = %v, want the sandbox", err)
		}
		if l, err := h.cli.ListPodSandbox(ctxT(t), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{}}); err != nil || len(l.GetItems()) != 1 {
			t.Fatalf("ListPodSandbox in the window = %v, %v, want sb1", l, err)
		}
	}
	rt.remove("sb1")
	for {
		ev := recvEvents(t, stream, 1)[0]
		if ev.GetContainerId() == "sb1" && ev.GetContainerEventType() == evDeleted {
			break
		}
	}
	if st, err := h.cli.PodSandboxStatus(ctxT(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "sb1"}); status.Code(err) != codes.NotFound {
		t.Errorf("PodSandboxStatus of the removed sandbox = %v, %v, want NotFound", st, err)
	}
	if l, err := h.cli.ListPodSandbox(ctxT(t), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{}}); err != nil || len(l.GetItems()) != 0 {
		t.Errorf("ListPodSandbox after the removal = %v, %v, want none", l, err)
	}
}

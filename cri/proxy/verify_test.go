package proxy_test

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cri/proxy"
)

// TestVerifyCountsStaleAnswers: shadow mode compares every cached answer
// with the runtime's. An answer the runtime changed without announcing it
// is a mismatch; list order is not a difference; a change announced
// within the settle time is not a mismatch.
func TestVerifyCountsStaleAnswers(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.addPod("sb1", "c1", running)
	rt.addPod("sb2", "c2", running)
	const settle = 50 * time.Millisecond
	h := startProxy(t, rt, proxy.WithVerify(settle))
	h.waitLive(t)

	// The fake lists from a map: its order changes between calls.
	for range 5 {
		listContainers(t, h, nil)
	}
	waitCounter(t, h, "probelet_cri_proxy_verify_total", 4, "result", "match")

	// A change nobody announces: the memo keeps serving the old answer.
	listContainers(t, h, &runtimeapi.ContainerFilter{PodSandboxId: "sb1"})
	rt.setState("c1", runtimeapi.ContainerState_CONTAINER_EXITED)
	listContainers(t, h, &runtimeapi.ContainerFilter{PodSandboxId: "sb1"})
	waitCounter(t, h, "probelet_cri_proxy_verify_total", 1, "result", "mismatch")
	if m := h.counter("probelet_cri_proxy_mismatch_total"); m != 1 {
		t.Errorf("mismatches = %v, want 1", m)
	}

	// A change announced while the comparison waits: settled.
	release := make(chan struct{})
	listContainers(t, h, &runtimeapi.ContainerFilter{PodSandboxId: "sb2"})
	rt.setState("c2", runtimeapi.ContainerState_CONTAINER_EXITED)
	rt.mu.Lock()
	rt.block["ListContainers"] = release // the verifier's fresh read
	rt.mu.Unlock()
	listContainers(t, h, &runtimeapi.ContainerFilter{PodSandboxId: "sb2"})
	<-rt.entered
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c2", PodSandboxStatus: &runtimeapi.PodSandboxStatus{Id: "sb2"}})
	waitCounter(t, h, "probelet_cri_proxy_invalidations_total", 1, "source", "runtime_event")
	close(release)
	waitCounter(t, h, "probelet_cri_proxy_verify_total", 1, "result", "settled")
	if m := h.counter("probelet_cri_proxy_mismatch_total"); m != 1 {
		t.Errorf("mismatches = %v, want still 1", m)
	}
}

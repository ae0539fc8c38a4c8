package proxy

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRememberedSandboxKeepsAllButAnnotations: what the announcer keeps
// of a sandbox for its events once it is gone holds every field of the
// status (one set in each, so a field added to the CRI is kept too) but
// the tenant's annotations.
func TestRememberedSandboxKeepsAllButAnnotations(t *testing.T) {
	full := &runtimeapi.PodSandboxStatus{
		Id:             "sb1",
		Metadata:       &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "u1", Namespace: "ns", Attempt: 1},
		State:          runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
		CreatedAt:      42,
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.2"},
		Linux:          &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{}},
		Labels:         map[string]string{"io.kubernetes.pod.uid": "u1"},
		Annotations:    map[string]string{"tenant/blob": strings.Repeat("x", 256<<10)},
		RuntimeHandler: "runc",
	}
	fields := full.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); !full.ProtoReflect().Has(fd) {
			t.Fatalf("the test's status leaves %s unset: set it, so that keeping it is tested", fd.Name())
		}
	}

	a := &announcer{lastSB: map[string]*runtimeapi.PodSandboxStatus{}}
	a.remember("sb1", full)
	a.remember("sb2", nil)
	kept := a.lastSB["sb1"]
	if kept.GetAnnotations() != nil {
		t.Errorf("the remembered status keeps %d annotations, want none", len(kept.GetAnnotations()))
	}
	want := proto.Clone(full).(*runtimeapi.PodSandboxStatus)
	want.Annotations = nil
	if !proto.Equal(kept, want) {
		t.Errorf("remembered %v, want %v", kept, want)
	}
	if full.GetAnnotations() == nil {
		t.Error("remembering changed the status it was given")
	}
	if _, ok := a.lastSB["sb2"]; ok {
		t.Error("a nil status was remembered")
	}
}

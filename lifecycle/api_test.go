package lifecycle_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/node"
)

func TestAPIPodCompletesTheSnapshot(t *testing.T) {
	e := newEnv(t)
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](7)}
	// Known to the API before the runtime runs it: nothing is created.
	e.cache.SetAPIPod(t0, "uid1", &node.APIPod{Spec: spec})
	if n := len(e.sink.all()); n != 0 {
		t.Fatalf("the API alone created a pod: %d sink calls", n)
	}
	e.cache.UpdateContainer(t0, sandbox("sb1", "uid1"), ctr("c1", "sb1", "web", running, t0))
	p := e.sink.last(t).pod
	if p.API == nil || p.API.Spec != spec || p.Deleting || p.TerminationGracePeriodSeconds == nil || *p.TerminationGracePeriodSeconds != 7 {
		t.Fatalf("snapshot = %+v, want the API spec and its grace, not deleting", p)
	}
	// Deletion requested in the API: deleting at once, before any sandbox stop.
	e.cache.SetAPIPod(t0, "uid1", &node.APIPod{Spec: spec, DeletionTimestamp: t0.Add(time.Second)})
	if p := e.sink.last(t).pod; !p.Deleting {
		t.Fatalf("snapshot after the deletion request = %+v, want deleting", p)
	}
	// Gone from the API: the runtime's view stays.
	e.cache.SetAPIPod(t0, "uid1", nil)
	if p := e.sink.last(t).pod; p.API != nil || p.Deleting || len(p.Containers) != 1 {
		t.Fatalf("snapshot after the API forgot the pod = %+v", p)
	}
}

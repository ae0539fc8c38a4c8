package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

// Between the runtime showing a container and the prober taking it up (a
// start, or every container at once when probelet restarts) the container
// has no probe state. What the socket shows meanwhile must be what the
// kubelet shows before a probe ran: not started with a startup probe, not
// ready with a readiness probe, both for a running container without them.
func TestContainerWithoutProbeStateShowsItsDeclaredGates(t *testing.T) {
	const tcp = `{"tcpSocket":{"port":8080}}`
	for _, tc := range []struct {
		name           string
		annotation     string // for container "app"; "" for none
		state          node.ContainerState
		started, ready bool
	}{
		{"no probes", "", node.StateRunning, true, true},
		{"liveness only", `{"app":{"livenessProbe":` + tcp + `}}`, node.StateRunning, true, true},
		{"readiness", `{"app":{"readinessProbe":` + tcp + `}}`, node.StateRunning, true, false},
		{"startup", `{"app":{"startupProbe":` + tcp + `}}`, node.StateRunning, false, false},
		{"startup and readiness", `{"app":{"startupProbe":` + tcp + `,"readinessProbe":` + tcp + `}}`, node.StateRunning, false, false},
		{"another container's readiness", `{"other":{"readinessProbe":` + tcp + `}}`, node.StateRunning, true, true},
		// Rejected probes do not run: the prober shows such a container
		// started and ready once it catches up, so the gap agrees.
		{"rejected readiness", `{"app":{"readinessProbe":{"periodSeconds":-1}}}`, node.StateRunning, true, true},
		{"malformed annotation", `{"app":`, node.StateRunning, true, true},
		{"exited, readiness", `{"app":{"readinessProbe":` + tcp + `}}`, node.StateExited, false, false},
		{"exited, no probes", "", node.StateExited, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("%064x", 0xa99)
			pod := node.Pod{UID: "uid-app", Name: "app", Namespace: "default", SandboxID: fmt.Sprintf("%064x", 0x5a),
				Containers: []node.Container{{ID: id, Name: "app", State: tc.state, StartedAt: time.Unix(1700000000, 0)}}}
			if tc.annotation != "" {
				pod.Annotations = map[string]string{probespec.AnnotationProbes: tc.annotation}
			}
			// The engine holds the pod's probes before it takes the container up.
			status := servertest.NewStatus()
			status.SetPodSpec(pod.UID, probespec.NewMemo(1<<20).Parse(tc.annotation))
			_, endpoint := servertest.Start(t, status, servertest.NewView(pod))
			api := apiv1.NewProbeletClient(servertest.Dial(t, endpoint))
			ctx := context.Background()
			list, err := api.ListContainers(context.Background(), &apiv1.ListContainersRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Containers) != 1 {
				t.Fatalf("ListContainers: %d containers, want 1", len(list.Containers))
			}
			got, err := api.GetContainer(ctx, &apiv1.GetContainerRequest{Container: id})
			if err != nil {
				t.Fatal(err)
			}
			for what, c := range map[string]*apiv1.Container{"ListContainers": list.Containers[0], "GetContainer": got.Container} {
				if c.Started != tc.started || c.Ready != tc.ready {
					t.Errorf("%s: started %v, ready %v; want started %v, ready %v", what, c.Started, c.Ready, tc.started, tc.ready)
				}
			}
		})
	}
}

// syncingView is a view whose runtime sync lands as it is read: the
// prober takes the pods up under the same lock, so its state is new by the
// time the view answers.
type syncingView struct {
	*servertest.View
	sync func()
}

func (v syncingView) Pods() []node.Pod {
	v.sync()
	return v.View.Pods()
}

// The socket reads the view before the probe state: state read after the
// view is at least as new, so a sync that lands between the two reads does
// not show the containers it brings without their probe state.
func TestSnapshotReadsTheViewBeforeTheProbeState(t *testing.T) {
	id := fmt.Sprintf("%064x", 0xa99)
	pod := node.Pod{UID: "uid-app", Name: "app", Namespace: "default", SandboxID: fmt.Sprintf("%064x", 0x5a),
		Annotations: map[string]string{probespec.AnnotationProbes: `{"app":{"readinessProbe":{"tcpSocket":{"port":8080}}}}`},
		Containers:  []node.Container{{ID: id, Name: "app", State: node.StateRunning, StartedAt: time.Unix(1700000000, 0)}}}
	status, view := servertest.NewStatus(), servertest.NewView(pod)
	synced := syncingView{View: view, sync: func() {
		status.Set(prober.ContainerStatus{PodUID: pod.UID, PodName: pod.Name, PodNamespace: pod.Namespace,
			ContainerName: "app", ContainerID: id, State: node.StateRunning, Started: true, Ready: true})
	}}
	_, endpoint := servertest.Start(t, status, synced)
	list, err := apiv1.NewProbeletClient(servertest.Dial(t, endpoint)).ListContainers(context.Background(), &apiv1.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Containers) != 1 || !list.Containers[0].Ready {
		t.Errorf("ListContainers = %v; want app ready, as its probe state says", list.Containers)
	}
}

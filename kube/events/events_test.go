package events_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/kube/events"
	"github.com/probelet/probelet/kube/kubetest"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

func TestEngineEventsBecomeKubeletStyleEvents(t *testing.T) {
	client := fake.NewClientset()
	status := servertest.NewStatus()
	r, err := events.New(kubetest.Client(client), "n1", status, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testutil.WaitFor(t, "the engine subscription", func() bool { n, _, _ := status.EventStats(); return n == 1 })

	base := prober.Event{Time: time.Now(), PodUID: "u1", PodName: "web", PodNamespace: "default",
		ContainerName: "app", ContainerID: "c1", ProbeType: probespec.Liveness}
	unhealthy, killing := base, base
	unhealthy.Type, unhealthy.Reason, unhealthy.Message = "Warning", "Unhealthy", "Liveness probe failed: connection refused"
	killing.Type, killing.Reason, killing.Message = "Normal", "Killing", "Container app failed liveness probe, will be restarted"
	for range 3 { // repeats aggregate into one Event with a count
		status.PublishEvent(unhealthy)
	}
	status.PublishEvent(killing)

	var evs []corev1.Event
	testutil.WaitFor(t, "two Events, the Unhealthy one counted 3 times", func() bool {
		list, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		evs = list.Items
		for _, e := range evs {
			if e.Reason == "Unhealthy" && e.Count != 3 {
				return false
			}
		}
		return len(evs) == 2
	})
	for _, e := range evs {
		ref := e.InvolvedObject
		if ref.Kind != "Pod" || ref.Name != "web" || ref.UID != "u1" || ref.FieldPath != "spec.containers{app}" ||
			e.Source.Component != "probelet" || e.Source.Host != "n1" {
			t.Errorf("event %s: involved %+v, source %+v", e.Reason, ref, e.Source)
		}
		switch e.Reason {
		case "Unhealthy":
			if e.Type != "Warning" || e.Message != unhealthy.Message {
				t.Errorf("Unhealthy = %s %q", e.Type, e.Message)
			}
		case "Killing":
			if e.Type != "Normal" || e.Message != killing.Message {
				t.Errorf("Killing = %s %q", e.Type, e.Message)
			}
		}
	}
}

// TestAFailedWriteIsRetriedAndRunLeavesNothingRunning: an Event the API
// server did not take is written on the next try, a retry-wait later; once
// Run returns, nothing of the recorder runs.
func TestAFailedWriteIsRetriedAndRunLeavesNothingRunning(t *testing.T) {
	client := fake.NewClientset()
	var failing atomic.Int32
	failing.Store(1)
	client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing.Add(-1) >= 0 {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	status := servertest.NewStatus()
	r, err := events.New(kubetest.Client(client), "n1", status, nil, events.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer cancel()
	testutil.WaitFor(t, "the engine subscription", func() bool { n, _, _ := status.EventStats(); return n == 1 })
	status.PublishEvent(prober.Event{Time: time.Now(), PodUID: "u1", PodName: "web", PodNamespace: "default",
		ContainerName: "app", ContainerID: "c1", ProbeType: probespec.Liveness, Type: "Warning", Reason: "Unhealthy", Message: "x"})

	testutil.WaitFor(t, "the retry wait", func() bool { return failing.Load() == 0 && clk.HasWaiters() })
	clk.Step(10 * time.Second)
	testutil.WaitFor(t, "the Event written on the retry", func() bool {
		list, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 1
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	testutil.NoGoroutines(t, "github.com/probelet/probelet/kube/events.", "k8s.io/client-go/tools/record.")
}

func TestInvolvedObjectOfAPodEventHasNoFieldPath(t *testing.T) {
	for _, tc := range []struct {
		container string
		sidecar   bool
		want      string
	}{
		{"app", false, "spec.containers{app}"},
		{"side", true, "spec.initContainers{side}"}, // the kubelet's path for a sidecar
		{"", false, ""}, // ProbeSpecChanged is about the pod
	} {
		ref := events.InvolvedObject(prober.Event{PodUID: "u1", PodName: "web", PodNamespace: "default", ContainerName: tc.container,
			InitContainer: tc.sidecar})
		if ref.FieldPath != tc.want || ref.Name != "web" || ref.UID != "u1" {
			t.Errorf("container %q: reference %+v, want field path %q", tc.container, ref, tc.want)
		}
	}
}

package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// step is one Event offered to both correlators, after advancing the clock.
type step struct {
	after   time.Duration
	pod     string
	reason  string
	message string
	// stored: the API server's answer is fed back (UpdateState), with this
	// resource version, as the Recorder does after a successful write.
	stored string
}

// TestCorrelatorMatchesClientGo runs the correlator side by side with
// client-go's EventCorrelator (what the kubelet uses) over sequences that
// exercise each of its parts, and compares every result: the Event to
// write, its patch (as JSON), and whether it was skipped as spam.
func TestCorrelatorMatchesClientGo(t *testing.T) {
	repeat := func(n int, s step) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	distinct := func(n int, s step) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = s
			out[i].message = fmt.Sprintf("%s %d", s.message, i)
		}
		return out
	}
	probeFailed := step{after: time.Second, pod: "web", reason: "Unhealthy", message: "Liveness probe failed"}
	cases := []struct {
		name  string
		burst int
		steps []step
	}{
		{"one event", 100, []step{probeFailed}},
		{"repeats counted, without the server's answer", 100, repeat(5, probeFailed)},
		{"repeats counted from what the server stored", 100, repeat(4, step{after: time.Second, pod: "web",
			reason: "Unhealthy", message: "Readiness probe failed", stored: "42"})},
		{"repeats of an empty message", 100, repeat(3, step{after: time.Second, pod: "web", reason: "Unhealthy"})},
		{"two pods counted apart", 100, []step{probeFailed, {after: time.Second, pod: "db", reason: "Unhealthy",
			message: "Liveness probe failed"}, probeFailed}},
		{"nine distinct messages stay apart", 100, distinct(9, probeFailed)},
		{"the tenth distinct message and later ones are combined", 100, distinct(14, probeFailed)},
		{"similar messages forgotten after the aggregation window", 100,
			append(distinct(9, probeFailed), step{after: aggregateWindow + time.Second, pod: "web",
				reason: "Unhealthy", message: "Liveness probe failed late"})},
		{"the spam filter drops past the burst", 3, repeat(6, step{pod: "web", reason: "Killing",
			message: "Container app failed liveness probe, will be restarted"})},
		{"the spam filter refills with time", 2, append(repeat(4, step{pod: "web", reason: "Unhealthy",
			message: "Startup probe failed"}), step{after: 10 * time.Second, pod: "web", reason: "Unhealthy",
			message: "Startup probe failed"})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			ours, theirs := clocktesting.NewFakeClock(start), clocktesting.NewFakeClock(start)
			c := newCorrelator(ours, 1, tc.burst)
			ref := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{QPS: 1, BurstSize: tc.burst, Clock: theirs})
			for i, s := range tc.steps {
				ours.Step(s.after)
				theirs.Step(s.after)
				got, gotErr := c.correlate(testEvent(s, ours.Now()))
				want, wantErr := ref.EventCorrelate(testEvent(s, theirs.Now()))
				if (gotErr != nil) != (wantErr != nil) {
					t.Fatalf("step %d: error %v, client-go's %v", i, gotErr, wantErr)
				}
				if got.skip != want.Skip {
					t.Fatalf("step %d: skip %v, client-go's %v", i, got.skip, want.Skip)
				}
				if want.Skip {
					continue
				}
				if !reflect.DeepEqual(got.event, want.Event) {
					t.Fatalf("step %d: Event\n%+v\nclient-go's\n%+v", i, got.event, want.Event)
				}
				if !sameJSON(t, got.patch, want.Patch) {
					t.Fatalf("step %d: patch %s, client-go's %s", i, got.patch, want.Patch)
				}
				if s.stored != "" {
					stored := *got.event
					stored.ResourceVersion = s.stored
					c.updateState(&stored)
					ref.UpdateState(&stored)
				}
			}
		})
	}
}

func TestCorrelatorRejectsNil(t *testing.T) {
	if _, err := newCorrelator(clocktesting.NewFakeClock(time.Now()), 1, 1).correlate(nil); err == nil {
		t.Fatal("a nil Event was accepted")
	}
}

func testEvent(s step, now time.Time) *corev1.Event {
	ts := metav1.NewTime(now)
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", s.pod, now.UnixNano()), Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: s.pod,
			UID: types.UID("uid-" + s.pod), FieldPath: "spec.containers{app}"},
		Reason: s.reason, Message: s.message, FirstTimestamp: ts, LastTimestamp: ts, Count: 1, Type: corev1.EventTypeWarning,
		Source:              corev1.EventSource{Component: Component, Host: "n1"},
		ReportingController: Component, ReportingInstance: "n1",
	}
}

// sameJSON compares two patches as JSON values (nil and nil are equal).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("patch %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("client-go's patch %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

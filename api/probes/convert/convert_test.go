package convert_test

import (
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/api/probes/convert"
	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func ts(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(t0.Add(d)) }

func specJSON(p *corev1.Probe) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// answer is a node's answer for one container with every field set.
func answer() *apiv1.WhyResponse {
	grace := int64(7)
	spec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3, TerminationGracePeriodSeconds: &grace}
	run := &apiv1.ProbeRun{Time: ts(-time.Second), Result: apiv1.Result_RESULT_FAILURE, Duration: durationpb.New(3 * time.Millisecond),
		Output: "HTTP probe failed with statuscode: 503\x1b[2J", Method: apiv1.Method_METHOD_HTTP, Error: "prober: x"}
	restart := &apiv1.Restart{Time: ts(-time.Minute), ContainerId: "old", ProbeType: apiv1.ProbeType_PROBE_TYPE_LIVENESS,
		GracePeriod: durationpb.New(30 * time.Second), Message: "Container app failed liveness probe, will be restarted", Error: "e"}
	return &apiv1.WhyResponse{
		Container: &apiv1.Container{ContainerId: "abc", ContainerName: "app", PodName: "web", PodNamespace: "default", PodUid: "uid-1",
			Image: "busybox", State: apiv1.ContainerState_CONTAINER_STATE_RUNNING, CreatedAt: ts(-time.Hour), StartedAt: ts(-time.Hour + time.Second),
			FinishedAt: ts(-time.Minute), ExitCode: 137, Started: true, Ready: false, SpecError: "none",
			Probes: []*apiv1.Probe{{Type: apiv1.ProbeType_PROBE_TYPE_READINESS, Result: apiv1.Result_RESULT_FAILURE, Consecutive: 2,
				OnHold: true, LastProbeTime: ts(-time.Second), LastOutput: "HTTP probe failed", Method: apiv1.Method_METHOD_EBPF,
				History: []*apiv1.ProbeRun{run}, KillDeferred: "kill guard: 3 kills in 10s", KillDeferredSince: ts(-2 * time.Second),
				Spec: &apiv1.ProbeSpec{Handler: "http-get http://:8080/ready", TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1,
					FailureThreshold: 3, TerminationGracePeriodSeconds: &grace, Json: specJSON(spec)}}},
			Restarts: []*apiv1.Restart{restart}},
		Explanations: []*apiv1.Explanation{{Subject: "not ready", ProbeType: apiv1.ProbeType_PROBE_TYPE_READINESS,
			Text: "readiness failed 2 of 3", Consecutive: 2, Threshold: 3, LastRuns: []*apiv1.ProbeRun{run}, Restarts: []*apiv1.Restart{restart}}},
	}
}

// TestARoundTripKeepsEverythingTheAPICarries: a node's answer converted
// to the API's form and back is the answer, but for the spec's JSON, which
// the API does not carry (its numbers and handler it does).
func TestARoundTripKeepsEverythingTheAPICarries(t *testing.T) {
	in := answer()
	in.Container.Probes[0].Spec.Json = ""
	pod := &probes.PodProbes{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	c := convert.Container(in)
	out := convert.Why(pod, &c)
	if !proto.Equal(in, out) {
		t.Fatalf("round trip:\n in  %v\n out %v", in, out)
	}
}

// TestTheAPISpellsEnumsAsKubernetesDoes: every enum value has a
// CamelCase word, and back.
func TestTheAPISpellsEnumsAsKubernetesDoes(t *testing.T) {
	c := convert.Container(answer())
	p := c.Probes[0]
	for _, tc := range []struct{ got, want string }{
		{c.State, "Running"}, {p.Type, "Readiness"}, {p.Result, "Failure"}, {p.Method, "EBPF"},
		{p.History[0].Method, "HTTP"}, {c.Restarts[0].ProbeType, "Liveness"}, {c.Explanations[0].ProbeType, "Readiness"},
		{convert.Result(apiv1.Result_RESULT_UNSPECIFIED), "Unknown"}, {convert.State(apiv1.ContainerState_CONTAINER_STATE_UNSPECIFIED), "Unknown"},
		{convert.Method(apiv1.Method_METHOD_UNSPECIFIED), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if p.Spec.Handler != "http-get http://:8080/ready" || p.Spec.FailureThreshold != 3 || p.Spec.PeriodSeconds != 10 ||
		p.Spec.TerminationGracePeriodSeconds == nil || *p.Spec.TerminationGracePeriodSeconds != 7 {
		t.Errorf("the spec as run: %+v", p.Spec)
	}
}

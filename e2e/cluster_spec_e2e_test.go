//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/probespec"
)

const specChangedMessage = "probelet.io/probes changed after the pod was created; " +
	"the probes it was created with stay in force — recreate the pod to apply"

// TestClusterProbeSpecIsFixedAtCreation: (a) `kubectl annotate
// --overwrite` of probelet.io/probes on a running pod leaves the engine,
// the socket and the condition on the probes the pod was created with,
// and is reported once (log, socket, a Warning Event ProbeSpecChanged);
// (b) a pod whose named port does not resolve gets the spec error
// `probelet validate` reports, on the socket, in the log and in the
// condition's message.
func TestClusterProbeSpecIsFixedAtCreation(t *testing.T) {
	t.Parallel()
	n := startClusterNode(t)
	readiness := execProbeSpec(1, 1, "test", "-f", "/tmp/ready")
	n.create(n.apiPod("web", shell("sleep 3600"), probespec.ContainerProbes{Readiness: readiness}, true))
	id := n.containerID("web")
	n.waitConditions("web", corev1.ConditionFalse, 30*time.Second)

	for i, value := range []string{"{}", `{"app":{"livenessProbe":{"exec":{"command":["false"]}}}}`} {
		if out, err := n.c.Kubectl("annotate", "pod", "web", "-n", "default", probespec.AnnotationProbes+"="+value, "--overwrite"); err != nil {
			t.Fatalf("kubectl annotate: %v\n%s", err, out)
		}
		if i == 0 {
			eventually(t, 30*time.Second, "the ProbeSpecChanged Event", func() (bool, string) {
				evs := n.probeletEvents("web", "ProbeSpecChanged")
				return len(evs) == 1, fmt.Sprintf("%d events", len(evs))
			})
			// The condition still follows the failing readiness probe the
			// pod was created with (the annotation now declares none).
			gate, _ := condition(n.pod("web"), readyGate)
			if gate.Status != corev1.ConditionFalse || gate.Reason != "ReadinessProbeFailed" {
				t.Fatalf("condition after the annotation changed = %+v, want False, ReadinessProbeFailed", gate)
			}
		}
	}
	// The probe the pod was created with still decides: the app turns
	// ready, the condition follows within a period or two.
	mustExec(t, n.bed, id, "touch", "/tmp/ready")
	n.waitConditions("web", corev1.ConditionTrue, 30*time.Second)

	ctr, ok := n.d.ctr(id)
	if _, hasReadiness := ctr.Probes["readiness"]; !ok || !hasReadiness || ctr.Probes["readiness"].Result != "Success" {
		t.Errorf("socket: %+v, want the readiness probe the pod was created with, succeeding", ctr)
	}
	if _, hasLiveness := ctr.Probes["liveness"]; hasLiveness {
		t.Errorf("socket: %+v runs the liveness probe of the changed annotation", ctr)
	}
	evs := n.probeletEvents("web", "ProbeSpecChanged")
	if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || evs[0].Message != specChangedMessage ||
		evs[0].Count > 1 || evs[0].InvolvedObject.FieldPath != "" {
		t.Errorf("ProbeSpecChanged Events = %+v, want one Warning about the pod: %s", evs, specChangedMessage)
	}
	if out := n.d.mustProbectl("events", "-o", "json"); strings.Count(out, `"ProbeSpecChanged"`) != 1 {
		t.Errorf("socket events: ProbeSpecChanged %d times, want once:\n%s", strings.Count(out, `"ProbeSpecChanged"`), out)
	}
	if logs := n.d.logsMatching(specChangedMessage); len(logs) != 1 {
		t.Errorf("log lines of the change: %d, want 1", len(logs))
	}

	checkNamedPortRejected(t, n)
}

// checkNamedPortRejected: a readiness probe on a port name the container
// does not declare is the spec error `probelet validate` reports for the
// same pod: on the socket, in the log, in the condition's message.
func checkNamedPortRejected(t *testing.T, n *clusterNode) {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("nope")}}, PeriodSeconds: 1}
	pod := n.apiPod("named", shell("sleep 3600"), probespec.ContainerProbes{Readiness: probe}, true)
	line := validateLine(t, pod)
	_, reason, _ := strings.Cut(line, `container "app": `)
	n.create(pod)
	id := n.containerID("named")
	eventually(t, 30*time.Second, "the spec error on the socket", func() (bool, string) {
		ctr, ok := n.d.ctr(id)
		return ok && ctr.SpecError == reason && len(ctr.Probes) == 0, fmt.Sprintf("%+v", ctr)
	})
	eventually(t, 30*time.Second, "the spec error in the condition", func() (bool, string) {
		gate, _ := condition(n.pod("named"), readyGate)
		return gate.Status == corev1.ConditionFalse && gate.Reason == "ProbeSpecRejected" &&
			strings.HasSuffix(gate.Message, reason), fmt.Sprintf("%+v", gate)
	})
	var logged []string
	for _, e := range n.d.logsMatching("Invalid probe spec") {
		if e.str("pod") == "default/named" {
			logged = append(logged, e.str("error"))
		}
	}
	if len(logged) != 1 || logged[0] != line {
		t.Errorf("logged spec errors %q, want once `probelet validate`'s %q", logged, line)
	}
}

// validateLine is what `probelet validate` says about pod's container app.
func validateLine(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	manifest, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bins.probelet, "validate", "-")
	cmd.Stdin = bytes.NewReader(manifest)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("probelet validate accepted the pod:\n%s", manifest)
	}
	for l := range strings.Lines(stderr.String()) {
		if strings.Contains(l, `container "app": `) {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("probelet validate: no error for container app:\n%s", stderr.String())
	return ""
}

// probeletEvents lists probelet's Events with reason on the pod.
func (n *clusterNode) probeletEvents(pod, reason string) []corev1.Event {
	n.t.Helper()
	evs, err := n.admin.CoreV1().Events("default").List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		n.t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.Source.Component == "probelet" && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

package slim_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probelet/probelet/controller/marking"
	"github.com/probelet/probelet/controller/slim"
	"github.com/probelet/probelet/controller/webhook"
	"github.com/probelet/probelet/probespec"
)

// webhookPod is a fixture of the webhook's tests, filled in with what a
// running pod carries besides.
func webhookPod(t *testing.T, file string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "webhook", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	p.Name, p.Namespace, p.UID, p.ResourceVersion = "web", "shop", "uid-web", "42"
	p.Annotations = map[string]string{"example.com/blob": string(make([]byte, 100<<10)), "probelet.io/note": "kept"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	p.Spec.NodeName = "n1"
	p.Spec.Volumes = []corev1.Volume{{Name: "data"}}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = []corev1.EnvVar{{Name: "BIG", Value: string(make([]byte, 10<<10))}}
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: probespec.ConditionReady, Status: corev1.ConditionTrue, Message: "probelet's words"},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady", Message: "the kubelet's words"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:1"}}}
	return &p
}

// What the controller decides about a pod is the same before and after
// the transform: whether the webhook would convert it (and why not), and
// whether the monitor would mark it.
func TestPodKeepsWhatTheControllerReads(t *testing.T) {
	for _, file := range []string{"web.json", "no-probes.json", "foreign-host.json", "plain-init.json", "merged.json", "invalid.json"} {
		t.Run(file, func(t *testing.T) {
			full := webhookPod(t, file)
			full.Spec.ReadinessGates = append(full.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: probespec.ConditionReady})
			slimmed := full.DeepCopy()
			if got, _ := slim.Transform(slimmed); got != slimmed {
				t.Fatal("Transform returned another object")
			}
			before, after := decide(t, full), decide(t, slimmed)
			if before != after {
				t.Errorf("decisions before the transform:\n%s\nafter:\n%s", before, after)
			}
			if slimmed.Name != "web" || slimmed.Namespace != "shop" || slimmed.UID != "uid-web" || slimmed.ResourceVersion != "42" ||
				slimmed.Spec.NodeName != "n1" || slimmed.Status.Phase != corev1.PodRunning {
				t.Errorf("identity, version, node or phase lost: %+v", slimmed.ObjectMeta)
			}
			if len(slimmed.Spec.Volumes) > 0 || slimmed.Status.PodIP != "" || len(slimmed.Status.ContainerStatuses) > 0 ||
				slimmed.Annotations["example.com/blob"] != "" || slimmed.ManagedFields != nil || len(slimmed.Spec.Containers[0].Env) > 0 {
				t.Errorf("kept what nothing reads: %+v", slimmed)
			}
			if len(slimmed.Status.Conditions) != 1 || slimmed.Status.Conditions[0].Type != probespec.ConditionReady ||
				slimmed.Status.Conditions[0].Status != corev1.ConditionTrue || slimmed.Status.Conditions[0].Message != "" {
				t.Errorf("conditions %+v, want probelet's alone, without its message", slimmed.Status.Conditions)
			}
			if slimmed.Annotations["probelet.io/note"] != "kept" {
				t.Errorf("probelet's annotations lost: %v", slimmed.Annotations)
			}
			if b, a := size(t, full), size(t, slimmed); a*10 > b {
				t.Errorf("slimmed %d bytes of %d", a, b)
			}
		})
	}
}

// decide is what the webhook and the monitor make of p.
func decide(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhook.Mutate(raw)
	converts := d.Patch != nil
	out, _ := json.Marshal(map[string]any{"converts": converts, "moved": d.Moved, "warnings": d.Warnings, "err": err != nil,
		"gated": marking.Gated(p), "needs": marking.Needs(p, probespec.ReasonProbeletUnavailable)})
	return string(out)
}

func size(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// A pod labelled managed itself keeps its managed fields (when the label
// came is read from them).
func TestALabelledPodKeepsItsManagedFields(t *testing.T) {
	p := webhookPod(t, "web.json")
	p.Labels = map[string]string{probespec.LabelProbes: probespec.LabelManaged}
	slim.Pod(p)
	if len(p.ManagedFields) != 1 || p.Labels[probespec.LabelProbes] != probespec.LabelManaged {
		t.Fatalf("labels %v, managed fields %v: want both kept", p.Labels, p.ManagedFields)
	}
}

// A node keeps its name, labels (the zone), addresses and Ready
// condition, not its image list or other conditions.
func TestNodeKeepsItsZoneAndReadiness(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7", Labels: map[string]string{corev1.LabelTopologyZone: "z1"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "kubelet is posting ready status"}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}},
			Images:    []corev1.ContainerImage{{Names: []string{"a"}, SizeBytes: 1}}}}
	slim.Transform(n)
	if n.Name != "n1" || n.ResourceVersion != "7" || n.Labels[corev1.LabelTopologyZone] != "z1" ||
		len(n.Status.Images) > 0 || n.Spec.PodCIDR != "" || len(n.Status.Addresses) != 1 {
		t.Fatalf("node %+v", n)
	}
	if want := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}; !reflect.DeepEqual(n.Status.Conditions, want) {
		t.Fatalf("conditions %+v, want %+v", n.Status.Conditions, want)
	}
}

// Everything else passes as it is.
func TestOtherObjectsPass(t *testing.T) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{"a": "b"}},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	for _, obj := range []any{l, ns, "tombstone"} {
		got, err := slim.Transform(obj)
		if err != nil || got != obj {
			t.Fatalf("Transform(%T) = %v, %v", obj, got, err)
		}
	}
	if l.Annotations["a"] != "b" || len(ns.ManagedFields) != 1 {
		t.Fatal("a Lease or a namespace was changed")
	}
}

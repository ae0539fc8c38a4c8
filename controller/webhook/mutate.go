// Package webhook is probelet-controller's mutating admission webhook: at
// pod CREATE in a managed namespace it moves the kubelet probes of the
// pod's containers and sidecars into the probelet.io/probes annotation and
// adds the probelet.io/ready readiness gate, through probespec/convert —
// the code `probelet convert` runs, so a manifest converted by hand and a
// pod converted at admission are the same. A pod the conversion refuses
// (a foreign host, an invalid probe) is left as it is: the kubelet keeps
// its probes, and the admission warning says why.
package webhook

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	sjson "sigs.k8s.io/json"

	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/probespec/convert"
)

// Decision is what the webhook does with one pod.
type Decision struct {
	// Patch is an RFC 6902 JSON patch of the pod; nil leaves it as it is.
	Patch []byte
	// Warnings are admission warnings: why a pod with probes was left as
	// it is.
	Warnings []string
	// Moved lists the moved probes as "container: livenessProbe".
	Moved []string
	// OptedOut: the pod is labelled probelet.io/probes=unmanaged, and
	// keeps the kubelet's probes.
	OptedOut bool
}

// op is one JSON patch operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Mutate decides for raw, a Pod as the API server sends it (JSON). A pod
// without kubelet probes, or one already converted, gets no patch.
func Mutate(raw []byte) (Decision, error) {
	// Case-sensitive, as the API server and convert read it: encoding/json
	// alone would take "Containers" for "containers".
	var pod corev1.Pod
	if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, &pod); err != nil {
		return Decision{}, fmt.Errorf("cannot read the pod: %w", err)
	}
	if pod.Labels[probespec.LabelProbes] == probespec.LabelUnmanaged {
		return Decision{OptedOut: true}, nil
	}
	if !hasProbes(&pod) {
		return Decision{}, nil
	}
	// convert reads Kubernetes objects: the API server's object may come
	// without its type.
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Decision{}, fmt.Errorf("cannot read the pod: %w", err)
	}
	obj["apiVersion"], obj["kind"] = "v1", "Pod"
	in, err := json.Marshal(obj)
	if err != nil {
		return Decision{}, err
	}
	res, errs := convert.Convert(in)
	if len(errs) > 0 {
		return Decision{Warnings: []string{refusal(errs)}}, nil
	}
	if !res.Changed() {
		return Decision{}, nil
	}
	var out corev1.Pod
	if err := sjson.UnmarshalCaseSensitivePreserveInts(res.Output, &out); err != nil {
		return Decision{}, fmt.Errorf("cannot read the converted pod: %w", err)
	}
	_, hasMeta := obj["metadata"].(map[string]any)
	ops := diff(&pod, &out, hasMeta)
	if len(ops) == 0 {
		return Decision{}, nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Patch: patch}
	for _, c := range res.Changes {
		d.Moved = append(d.Moved, c.Moved...)
	}
	return d, nil
}

// refusal is the warning of a pod the conversion refused.
func refusal(errs convert.ErrorList) string {
	var why []string
	for _, e := range errs {
		detail := e.Detail
		if e.Field != "" {
			detail = e.Field + ": " + detail
		}
		why = append(why, detail)
	}
	return "probelet: this pod keeps its kubelet probes (probelet would refuse them): " + strings.Join(why, "; ")
}

// hasProbes reports whether any container or init container has a kubelet
// probe.
func hasProbes(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !probespec.NativeProbes(&list[i]).Empty() {
				return true
			}
		}
	}
	return false
}

// diff is the JSON patch from pod to out, its conversion: the probes
// removed, the annotation set, the gate added. Only those can differ.
// hasMeta says whether the pod as sent has a metadata object at all.
func diff(pod, out *corev1.Pod, hasMeta bool) []op {
	var ops []op
	for _, l := range []struct {
		field    string
		was, now []corev1.Container
	}{{"initContainers", pod.Spec.InitContainers, out.Spec.InitContainers}, {"containers", pod.Spec.Containers, out.Spec.Containers}} {
		for i := range l.was {
			was := probespec.NativeProbes(&l.was[i])
			for _, t := range probespec.Types {
				if was.Get(t) != nil && i < len(l.now) && probespec.NativeProbes(&l.now[i]).Get(t) == nil {
					ops = append(ops, op{Op: "remove", Path: fmt.Sprintf("/spec/%s/%d/%s", l.field, i, probespec.FieldName(t))})
				}
			}
		}
	}
	value := out.Annotations[probespec.AnnotationProbes]
	switch {
	case !hasMeta:
		ops = append(ops, op{Op: "add", Path: "/metadata", Value: map[string]any{"annotations": map[string]string{probespec.AnnotationProbes: value}}})
	case pod.Annotations == nil:
		ops = append(ops, op{Op: "add", Path: "/metadata/annotations", Value: map[string]string{probespec.AnnotationProbes: value}})
	case pod.Annotations[probespec.AnnotationProbes] != value:
		ops = append(ops, op{Op: "add", Path: "/metadata/annotations/" + escape(probespec.AnnotationProbes), Value: value})
	}
	if len(out.Spec.ReadinessGates) > len(pod.Spec.ReadinessGates) {
		if pod.Spec.ReadinessGates == nil {
			ops = append(ops, op{Op: "add", Path: "/spec/readinessGates", Value: out.Spec.ReadinessGates})
		} else {
			ops = append(ops, op{Op: "add", Path: "/spec/readinessGates/-", Value: out.Spec.ReadinessGates[len(out.Spec.ReadinessGates)-1]})
		}
	}
	return ops
}

// escape is a JSON pointer token (RFC 6901).
func escape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

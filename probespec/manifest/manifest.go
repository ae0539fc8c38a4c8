// Package manifest finds the pods a Kubernetes manifest describes, with
// their probelet.io/probes annotation, so `probelet validate` can check a
// Pod or a workload's pod template before it is deployed.
package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/probelet/probelet/probespec"
)

// ErrNoPods is returned for a manifest in which no document carries a pod.
var ErrNoPods = errors.New("no Pod and no workload with a pod template found")

// Pod is one pod a manifest document describes.
type Pod struct {
	// Kind is the document's kind: Pod, or the workload (Deployment, ...)
	// whose pod template this is.
	Kind string
	// Ref is the object's namespace (default "default") and name.
	Ref probespec.PodRef
	// Annotation is the pod's probelet.io/probes value; HasAnnotation
	// tells whether it is set at all.
	Annotation    string
	HasAnnotation bool
	// Spec is the pod spec the probes will run in.
	Spec *corev1.PodSpec
	// Origin is the pod's probelet.io/probe-origin, "" when unset.
	Origin string
	// Misplaced is set when a workload carries the annotation on its own
	// metadata, where its pods never see it, and not on its pod template.
	Misplaced bool
	// Err explains why the document could not be read; the other fields
	// are then best effort.
	Err error
}

// Read finds the pods in data, YAML or JSON with any number of documents.
// isManifest is false when data is not a Kubernetes manifest (no document
// with a string apiVersion or kind), e.g. a bare annotation value; data too
// broken to parse is a manifest only if it has an apiVersion or kind line.
// The items of a List are read like documents.
// Documents without a pod (a Service) are skipped; ErrNoPods is returned
// when none has one.
func Read(data []byte) (pods []Pod, isManifest bool, err error) {
	docs, err := probespec.YAMLDocuments(data, yaml.YAMLToJSON)
	if err != nil {
		if !manifestLine.Match(data) {
			return nil, false, nil
		}
		return []Pod{{Err: fmt.Errorf("cannot read the manifest: %w", err)}}, true, nil
	}
	if len(docs) == 0 || !hasKind(docs[0]) {
		return nil, false, nil
	}
	for _, doc := range docs {
		pods = append(pods, readPods(doc)...)
	}
	if len(pods) == 0 {
		return nil, true, ErrNoPods
	}
	return pods, true, nil
}

// manifestLine spots a manifest that is too broken to parse.
var manifestLine = regexp.MustCompile(`(?m)^\s*"?(apiVersion|kind)"?\s*:`)

// hasKind reports whether a document is a Kubernetes object: its
// apiVersion or kind is a string (in a bare annotation a container named
// "kind" maps to an object).
func hasKind(doc []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil {
		return false
	}
	for _, k := range []string{"apiVersion", "kind"} {
		var s string
		if raw, ok := top[k]; ok && json.Unmarshal(raw, &s) == nil {
			return true
		}
	}
	return false
}

// object is the part of any object that can carry a pod: a workload's
// spec.template, a CronJob's spec.jobTemplate.spec.template or a
// PodTemplate's template (a Pod is read as a whole).
type object struct {
	Kind     string                  `json:"kind"`
	Metadata metav1.ObjectMeta       `json:"metadata"`
	Template *corev1.PodTemplateSpec `json:"template"`
	Spec     struct {
		Template    *corev1.PodTemplateSpec `json:"template"`
		JobTemplate *struct {
			Spec struct {
				Template *corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

func (o *object) podTemplate() *corev1.PodTemplateSpec {
	switch {
	case o.Spec.Template != nil:
		return o.Spec.Template
	case o.Spec.JobTemplate != nil:
		return o.Spec.JobTemplate.Spec.Template
	}
	return o.Template
}

// readPods reads one document: its pod, or the pods of the items of a List
// (kind List, PodList, DeploymentList, ...).
func readPods(doc []byte) []Pod {
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(doc, &list) == nil && strings.HasSuffix(list.Kind, "List") && list.Items != nil {
		var pods []Pod
		for _, item := range list.Items {
			pods = append(pods, readPods(item)...)
		}
		return pods
	}
	if p, ok := readPod(doc); ok {
		return []Pod{p}
	}
	return nil
}

// readPod reads one document; ok is false when it carries no pod.
func readPod(doc []byte) (Pod, bool) {
	var o object
	err := sjson.UnmarshalCaseSensitivePreserveInts(doc, &o)
	p := Pod{Kind: o.Kind, Ref: probespec.PodRef{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}}
	if p.Ref.Namespace == "" {
		p.Ref.Namespace = metav1.NamespaceDefault
	}
	if err != nil {
		p.Err = fmt.Errorf("cannot read the %s: %w", kindOr(o.Kind), err)
		return p, true
	}
	tmpl := o.podTemplate()
	if o.Kind == "Pod" {
		var pod corev1.Pod
		if err := sjson.UnmarshalCaseSensitivePreserveInts(doc, &pod); err != nil {
			p.Err = fmt.Errorf("cannot read the Pod: %w", err)
			return p, true
		}
		tmpl = &corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}
	}
	if tmpl == nil {
		return p, false
	}
	p.Spec = &tmpl.Spec
	p.Annotation, p.HasAnnotation = tmpl.Annotations[probespec.AnnotationProbes]
	p.Origin = tmpl.Annotations[probespec.AnnotationProbeOrigin]
	_, onObject := o.Metadata.Annotations[probespec.AnnotationProbes]
	p.Misplaced = !p.HasAnnotation && onObject && o.Kind != "Pod"
	return p, true
}

func kindOr(kind string) string {
	if kind == "" {
		return "manifest"
	}
	return kind
}

package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	syaml "sigs.k8s.io/yaml"

	"github.com/probelet/probelet/probespec"
)

// templateAt says where each kind keeps its pod template.
var templateAt = map[string][]string{
	"Deployment":            {"spec", "template"},
	"StatefulSet":           {"spec", "template"},
	"DaemonSet":             {"spec", "template"},
	"ReplicaSet":            {"spec", "template"},
	"ReplicationController": {"spec", "template"},
	"Job":                   {"spec", "template"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template"},
	"PodTemplate":           {"template"},
}

// converter converts one document.
type converter struct {
	doc        int
	lineOffset int
	changes    []Change
	errs       ErrorList
}

func (c *converter) line(n *yaml.Node) int {
	if n == nil || n.Line == 0 {
		return 0
	}
	return n.Line + c.lineOffset
}

// object converts the pod template of obj, or of each item of a List.
// path is obj's own path in the document ("" or "items[3]").
func (c *converter) object(obj *yaml.Node, path string) {
	kind := str(obj, "kind")
	if items := value(obj, "items"); strings.HasSuffix(kind, "List") && items != nil && items.Kind == yaml.SequenceNode {
		for i, item := range items.Content {
			if item.Kind == yaml.MappingNode {
				c.object(item, join(path, fmt.Sprintf("items[%d]", i)))
			}
		}
		return
	}
	meta := value(obj, "metadata")
	t := &tmpl{c: c, ref: probespec.PodRef{Namespace: str(meta, "namespace"), Name: str(meta, "name")}, path: path}
	t.object = kind + " " + t.ref.String()
	if kind == "Pod" {
		t.meta, t.spec = obj, value(obj, "spec")
		t.convert()
		return
	}
	keys, ok := templateAt[kind]
	if !ok {
		return
	}
	node := obj
	for _, k := range keys {
		if node = value(node, k); node == nil {
			return
		}
		t.path = join(t.path, k)
	}
	if node.Kind != yaml.MappingNode {
		t.fail(node, "", "must be a pod template (a mapping)")
		return
	}
	t.meta, t.spec = node, value(node, "spec")
	t.convert()
}

func join(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	}
	return path + "." + field
}

// tmpl is one pod template (or Pod): meta is the mapping holding its
// metadata, spec its pod spec.
type tmpl struct {
	c      *converter
	object string
	ref    probespec.PodRef
	path   string // of the template (or Pod) in the document
	meta   *yaml.Node
	spec   *yaml.Node
	failed bool
}

func (t *tmpl) fail(n *yaml.Node, field, detail string) {
	t.failed = true
	t.c.errs = append(t.c.errs, &Error{Doc: t.c.doc, Line: t.c.line(n), Object: t.object, Field: join(t.path, field), Detail: detail})
}

// native is one probe found in a container of the spec.
type native struct {
	container string
	typ       probespec.Type
	probe     *corev1.Probe
	raw       any        // the probe as written, for the annotation
	parent    *yaml.Node // the container's mapping
}

// convert moves the template's probes into its annotation.
func (t *tmpl) convert() {
	if t.spec == nil {
		return
	}
	if t.spec.Kind != yaml.MappingNode {
		t.fail(t.spec, "spec", "must be a pod spec (a mapping)")
		return
	}
	found := t.collect()
	if t.failed || len(found) == 0 {
		return
	}
	probes, raw, annotated := t.annotation()
	if t.failed {
		return
	}
	ch := Change{Doc: t.c.doc, Object: t.object}
	for _, n := range found {
		cp := probes[n.container]
		field := probespec.FieldName(n.typ)
		desc := n.container + ": " + field
		if have := cp.Get(n.typ); have != nil {
			if !sameProbe(have, n.probe) {
				t.fail(n.parent, "", fmt.Sprintf("container %q: %s differs from the one in the %s annotation; keep one of them by hand",
					n.container, field, probespec.AnnotationProbes))
				continue
			}
			ch.Merged = append(ch.Merged, desc)
		} else {
			setProbe(&cp, n.typ, n.probe)
			if raw[n.container] == nil {
				raw[n.container] = map[string]any{}
			}
			raw[n.container][field] = n.raw
			ch.Moved = append(ch.Moved, desc)
		}
		probes[n.container] = cp
	}
	if t.failed {
		return
	}
	// encoding/json sorts the keys: containers, then livenessProbe,
	// readinessProbe, startupProbe, then each probe's fields.
	value, err := json.Marshal(raw)
	if err != nil {
		t.fail(nil, "", err.Error())
		return
	}
	t.check(string(value))
	if t.failed {
		return
	}
	for _, n := range found {
		remove(n.parent, probespec.FieldName(n.typ))
	}
	t.setAnnotation(string(value), annotated)
	if hasReadiness(probes) {
		ch.GateAdded = t.addGate()
	}
	t.c.changes = append(t.c.changes, ch)
}

// sameProbe reports whether a and b are the same probe once both carry
// the Kubernetes defaults: the API server defaults a pod's probes before
// admission, so a webhook sees `timeoutSeconds: 1` where the annotation
// may leave it out.
func sameProbe(a, b *corev1.Probe) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	probespec.DefaultProbe(a)
	probespec.DefaultProbe(b)
	return reflect.DeepEqual(a, b)
}

func setProbe(cp *probespec.ContainerProbes, t probespec.Type, p *corev1.Probe) {
	switch t {
	case probespec.Liveness:
		cp.Liveness = p
	case probespec.Readiness:
		cp.Readiness = p
	case probespec.Startup:
		cp.Startup = p
	}
}

func hasReadiness(probes probespec.PodProbes) bool {
	for _, cp := range probes {
		if cp.Readiness != nil {
			return true
		}
	}
	return false
}

// collect finds the probes of the containers and restartable init
// containers, decoded strictly; probes of plain init containers are errors.
func (t *tmpl) collect() []native {
	var out []native
	for _, list := range []string{"initContainers", "containers"} {
		seq := value(t.spec, list)
		if seq == nil {
			continue
		}
		if seq.Kind != yaml.SequenceNode {
			t.fail(seq, "spec."+list, "must be a list of containers")
			continue
		}
		for i, ctr := range seq.Content {
			out = append(out, t.containerProbes(ctr, fmt.Sprintf("spec.%s[%d]", list, i), list == "initContainers")...)
		}
	}
	return out
}

func (t *tmpl) containerProbes(ctr *yaml.Node, path string, init bool) []native {
	if ctr.Kind != yaml.MappingNode {
		t.fail(ctr, path, "must be a container (a mapping)")
		return nil
	}
	var out []native
	name := str(ctr, "name")
	for _, typ := range probespec.Types {
		field := probespec.FieldName(typ)
		k, v := lookup(ctr, field)
		if v == nil {
			continue
		}
		switch {
		case init && str(ctr, "restartPolicy") != string(corev1.ContainerRestartPolicyAlways):
			t.fail(k, path+"."+field, "Forbidden: probes may not be set for init containers without restartPolicy: Always "+
				"(the API server rejects them; probelet would too); remove it or make the init container a sidecar")
			continue
		case name == "":
			t.fail(ctr, path+".name", "Required value: the container needs a name to key the annotation")
			continue
		}
		p, raw, sub, detail := decodeProbe(v)
		if detail != "" {
			t.fail(v, join(path+"."+field, sub), detail)
			continue
		}
		out = append(out, native{container: name, typ: typ, probe: p, raw: raw, parent: ctr})
	}
	return out
}

// decodeProbe decodes a probe node strictly; on failure it returns the
// offending field below the probe ("" for the probe itself) and why.
func decodeProbe(n *yaml.Node) (p *corev1.Probe, raw any, field, detail string) {
	if err := n.Decode(&raw); err != nil {
		return nil, nil, "", err.Error()
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, nil, "", err.Error()
	}
	p = &corev1.Probe{}
	strict, err := sjson.UnmarshalStrict(data, p)
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return nil, nil, lowerPath(te.Field), fmt.Sprintf("Invalid value: must be %s, not %s", te.Type, te.Value)
	case err != nil:
		return nil, nil, "", strings.TrimPrefix(err.Error(), "json: ")
	case len(strict) > 0:
		var fe sjson.FieldError
		if !errors.As(strict[0], &fe) {
			return nil, nil, "", strict[0].Error()
		}
		if strings.HasPrefix(strict[0].Error(), "duplicate field") {
			return nil, nil, fe.FieldPath(), "Duplicate value: set more than once"
		}
		return nil, nil, fe.FieldPath(), "Forbidden: unknown field"
	}
	return p, raw, "", ""
}

// lowerPath drops the Go names of embedded structs (ProbeHandler) from a
// type error's path; Kubernetes JSON names are lowerCamel.
func lowerPath(goPath string) string {
	var kept []string
	for _, p := range strings.Split(goPath, ".") {
		if p != "" && (p[0] < 'A' || p[0] > 'Z') {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// annotation reads the template's probelet.io/probes annotation to merge
// into it: typed (without defaults) to compare probes, and as written to
// keep it; annotated tells whether it is set.
func (t *tmpl) annotation() (probespec.PodProbes, map[string]map[string]any, bool) {
	av := value(value(value(t.meta, "metadata"), "annotations"), probespec.AnnotationProbes)
	if av == nil {
		return probespec.PodProbes{}, map[string]map[string]any{}, false
	}
	field := "metadata.annotations." + probespec.AnnotationProbes
	if _, errs := probespec.Parse(t.ref, av.Value); len(errs) > 0 {
		t.fail(av, field, "cannot merge into it: "+errs[0].Reason())
		return nil, nil, true
	}
	probes, raw := probespec.PodProbes{}, map[string]map[string]any{}
	data, err := syaml.YAMLToJSONStrict([]byte(av.Value))
	if err == nil {
		err = json.Unmarshal(data, &probes)
	}
	if err == nil {
		err = json.Unmarshal(data, &raw)
	}
	if err != nil {
		t.fail(av, field, "cannot merge into it: "+err.Error())
		return nil, nil, true
	}
	return probes, raw, true
}

// check applies spec.Check to the converted template, as `probelet
// validate` and the daemon will.
func (t *tmpl) check(annotation string) {
	var v any
	if err := t.spec.Decode(&v); err != nil {
		t.fail(t.spec, "spec", err.Error())
		return
	}
	data, err := json.Marshal(v)
	var ps corev1.PodSpec
	if err == nil {
		err = sjson.UnmarshalCaseSensitivePreserveInts(data, &ps)
	}
	if err != nil {
		t.fail(t.spec, "spec", "cannot read the pod spec: "+strings.TrimPrefix(err.Error(), "json: "))
		return
	}
	checked := probespec.Check(t.ref, annotation, &ps)
	for _, e := range checked.Errors {
		ctr, path := t.container(e.Container)
		if ctr == nil || e.Field == nil {
			t.fail(t.spec, "", e.Error())
			continue
		}
		t.fail(ctr, join(path, e.Field.Field), e.Field.ErrorBody())
	}
}

// container finds a container (or init container) by name: its node and
// path from the template.
func (t *tmpl) container(name string) (*yaml.Node, string) {
	for _, list := range []string{"initContainers", "containers"} {
		if seq := value(t.spec, list); seq != nil && seq.Kind == yaml.SequenceNode {
			for i, c := range seq.Content {
				if str(c, "name") == name {
					return c, fmt.Sprintf("spec.%s[%d]", list, i)
				}
			}
		}
	}
	return nil, ""
}

// setAnnotation writes the annotation value, creating metadata and
// annotations when missing.
func (t *tmpl) setAnnotation(text string, annotated bool) {
	annotations := child(child(t.meta, "metadata", true), "annotations", false)
	if annotations.Kind != yaml.MappingNode {
		t.fail(annotations, "metadata.annotations", "must be a mapping")
		return
	}
	n := scalar(text)
	n.Style = yaml.SingleQuotedStyle
	if annotated {
		// Keep the comments of the value being replaced.
		old := value(annotations, probespec.AnnotationProbes)
		n.HeadComment, n.LineComment, n.FootComment = old.HeadComment, old.LineComment, old.FootComment
	}
	set(annotations, probespec.AnnotationProbes, n)
}

// addGate adds the probelet.io/ready readiness gate unless it is there.
func (t *tmpl) addGate() bool {
	gates := value(t.spec, "readinessGates")
	if gates == nil {
		gates = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		set(t.spec, "readinessGates", gates)
	}
	for _, g := range gates.Content {
		if str(g, "conditionType") == probespec.ConditionReady {
			return false
		}
	}
	gate := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: gates.Style & yaml.FlowStyle}
	gate.Content = []*yaml.Node{scalar("conditionType"), scalar(probespec.ConditionReady)}
	gates.Content = append(gates.Content, gate)
	return true
}

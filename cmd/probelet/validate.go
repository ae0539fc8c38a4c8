package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/spec"
)

// Exit statuses of `probelet validate`.
const (
	validateOK      = 0
	validateInvalid = 1
	validateUsage   = 2
)

const validateUsageText = `Usage: probelet validate [-o text|json] [-pod NAMESPACE/NAME] [FILE|-]

Checks the probes declared in the probelet.io/probes annotation and prints
them defaulted, per container. FILE (or stdin, or "-") is either a manifest
(YAML or JSON, several documents allowed) of a Pod or of a workload with a
pod template (Deployment, StatefulSet, DaemonSet, Job, CronJob, ...), or a
bare annotation value. With a manifest, every annotated container must exist
and named ports must resolve against that container's ports.

Exit status: 0 valid, 1 invalid (every error on stderr), 2 usage or I/O error.

Flags:
`

// validateOptions are the command line of `probelet validate`.
type validateOptions struct {
	output string
	pod    string
	file   string
}

// runValidate runs `probelet validate` and returns its exit status.
func runValidate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, code, ok := parseValidateArgs(args, stderr)
	if !ok {
		return code
	}
	data, err := o.read(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "probelet validate: %v\n", err)
		return validateUsage
	}
	docs, err := podDocs(data)
	if err != nil {
		fmt.Fprintf(stderr, "probelet validate: %s: %v\n", o.name(), err)
		return validateUsage
	}
	if o.pod != "" {
		ref := spec.PodRef{Name: o.pod}
		if ns, name, ok := strings.Cut(o.pod, "/"); ok {
			ref = spec.PodRef{Namespace: ns, Name: name}
		}
		for _, d := range docs {
			d.ref = ref
		}
	}
	docs = skipUnannotated(docs, stderr)
	return o.report(docs, stdout, stderr)
}

// skipUnannotated drops, with a note, the pods of a multi-document
// manifest that do not use probelet (a migration Job next to the app),
// unless none does: then each is reported as missing the annotation.
func skipUnannotated(docs []*podDoc, stderr io.Writer) []*podDoc {
	if len(docs) < 2 {
		return docs
	}
	var kept []*podDoc
	for _, d := range docs {
		if d.set || d.misplaced || d.unreadable != "" {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		return docs
	}
	for _, d := range docs {
		if !d.set && !d.misplaced && d.unreadable == "" {
			fmt.Fprintf(stderr, "note: %s has no %s annotation, skipped\n", d.title(), spec.AnnotationProbes)
		}
	}
	return kept
}

// parseValidateArgs reads flags and the optional FILE; ok is false when the
// command is done (help, or a usage error with its exit code).
func parseValidateArgs(args []string, stderr io.Writer) (validateOptions, int, bool) {
	var o validateOptions
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, validateUsageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.output, "o", "text", "output format: text or json")
	fs.StringVar(&o.pod, "pod", "", "name the pod NAMESPACE/NAME in messages (default: from the manifest)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, validateOK, false
		}
		return o, validateUsage, false
	}
	if o.output != "text" && o.output != "json" {
		fmt.Fprintf(stderr, "probelet validate: -o %q: must be text or json\n", o.output)
		return o, validateUsage, false
	}
	switch fs.NArg() {
	case 0:
	case 1:
		o.file = fs.Arg(0)
	default:
		fmt.Fprintf(stderr, "probelet validate: one FILE at most, got %d\n", fs.NArg())
		fs.Usage()
		return o, validateUsage, false
	}
	return o, validateOK, true
}

// read returns the input: FILE, or stdin when there is none or it is "-".
func (o validateOptions) read(stdin io.Reader) ([]byte, error) {
	if o.file == "" || o.file == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(o.file)
}

// name is how messages refer to the input.
func (o validateOptions) name() string {
	if o.file == "" || o.file == "-" {
		return "stdin"
	}
	return o.file
}

// podDoc is one pod to check: from a manifest, or a bare annotation value.
type podDoc struct {
	ref spec.PodRef
	// kind is the manifest's kind; empty for a bare annotation.
	kind string
	// annotation is the probelet.io/probes value; set tells whether it exists.
	annotation string
	set        bool
	// podSpec is the pod the probes run in; nil for a bare annotation.
	podSpec *corev1.PodSpec
	// misplaced is set when a workload carries the annotation on its own
	// metadata, where pods never see it, instead of its pod template's.
	misplaced bool
	// unreadable explains why the manifest itself could not be read.
	unreadable string
}

// title heads the pod's text output.
func (d *podDoc) title() string {
	switch {
	case d.kind == "" && d.unreadable != "":
		return "Manifest (unreadable)"
	case d.kind == "":
		return "Annotation (pod " + d.ref.String() + ")"
	case d.kind == "Pod":
		return "Pod " + d.ref.String()
	}
	return d.kind + " " + d.ref.String() + " (pod template)"
}

// manifestLine spots a manifest that is too broken to parse.
var manifestLine = regexp.MustCompile(`(?m)^\s*"?(apiVersion|kind)"?\s*:`)

// podDocs splits the input into the pods it describes. Input that is not a
// manifest (no apiVersion or kind) is a bare annotation value; so is input
// that cannot be read at all, so Parse explains the syntax error.
func podDocs(data []byte) ([]*podDoc, error) {
	chunks, err := yamlDocuments(data)
	if err != nil && manifestLine.Match(data) {
		return []*podDoc{{unreadable: "cannot read the manifest: " + err.Error()}}, nil
	}
	if err != nil || len(chunks) == 0 || !isManifest(chunks[0]) {
		return []*podDoc{{annotation: string(data), set: true}}, nil
	}
	var docs []*podDoc
	for _, c := range chunks {
		if d := manifestDoc(c); d != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil, errors.New("no Pod and no workload with a pod template found")
	}
	return docs, nil
}

// yamlDocuments converts each non-empty YAML (or JSON) document to JSON.
func yamlDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		chunk, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(j, []byte("null")) {
			out = append(out, j)
		}
	}
}

// isManifest reports whether a document is a Kubernetes object: an object
// whose apiVersion or kind is a string (a container named "kind" would map
// to an object instead).
func isManifest(doc []byte) bool {
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

// manifest is the part of any object that can carry a pod: a Pod's spec,
// a workload's spec.template, a CronJob's spec.jobTemplate.spec.template or
// a PodTemplate's template.
type manifest struct {
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

// manifestDoc reads one manifest; nil when it carries no pod (a Service).
func manifestDoc(doc []byte) *podDoc {
	var m manifest
	err := sjson.UnmarshalCaseSensitivePreserveInts(doc, &m)
	d := &podDoc{kind: m.Kind, ref: spec.PodRef{Namespace: m.Metadata.Namespace, Name: m.Metadata.Name}}
	if d.ref.Namespace == "" {
		d.ref.Namespace = metav1.NamespaceDefault
	}
	if err != nil {
		d.unreadable = "cannot read the manifest: " + err.Error()
		return d
	}
	var tmpl *corev1.PodTemplateSpec
	if m.Kind == "Pod" {
		var pod corev1.Pod
		if err := sjson.UnmarshalCaseSensitivePreserveInts(doc, &pod); err != nil {
			d.unreadable = "cannot read the Pod: " + err.Error()
			return d
		}
		tmpl = &corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}
	} else if tmpl = m.podTemplate(); tmpl == nil {
		return nil
	}
	d.podSpec = &tmpl.Spec
	d.annotation, d.set = tmpl.Annotations[spec.AnnotationProbes]
	_, onWorkload := m.Metadata.Annotations[spec.AnnotationProbes]
	d.misplaced = !d.set && onWorkload && m.Kind != "Pod"
	return d
}

func (m *manifest) podTemplate() *corev1.PodTemplateSpec {
	switch {
	case m.Spec.Template != nil:
		return m.Spec.Template
	case m.Spec.JobTemplate != nil:
		return m.Spec.JobTemplate.Spec.Template
	}
	return m.Template
}

// podReport is the outcome for one pod; its JSON form is the stable output
// of `-o json`.
type podReport struct {
	Pod        string         `json:"pod"`
	Containers spec.PodProbes `json:"containers"`
	Errors     []string       `json:"errors"`
	Warnings   []string       `json:"warnings"`
	doc        *podDoc
	errs       spec.ErrorList
}

// check parses, defaults and validates one pod's annotation.
func check(d *podDoc) *podReport {
	r := &podReport{Pod: d.ref.String(), Containers: spec.PodProbes{}, doc: d}
	switch {
	case d.unreadable != "":
		r.fail(fmt.Sprintf("pod %s: %s", d.ref, d.unreadable))
		return r
	case d.misplaced:
		r.fail(fmt.Sprintf("pod %s: annotation %s is on the %s's own metadata; pods only get "+
			"it from spec.template.metadata.annotations", d.ref, spec.AnnotationProbes, d.kind))
		return r
	case !d.set:
		r.fail(fmt.Sprintf("pod %s: annotation %s is not set in metadata.annotations", d.ref, spec.AnnotationProbes))
		return r
	}
	probes, errs := spec.Parse(d.ref, d.annotation)
	if d.podSpec != nil {
		errs = append(errs, spec.CheckPod(d.ref, probes, d.podSpec)...)
		r.Warnings = nativeProbeWarnings(d.ref, probes, d.podSpec)
	}
	// Errors from parsing and from the pod check, grouped by container.
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Container < errs[j].Container })
	for _, bad := range errs.Containers() {
		delete(probes, bad)
	}
	for name, cp := range probes {
		r.Containers[name] = cp
	}
	r.errs = errs
	r.Errors = append(r.Errors, errs.Strings()...)
	return r
}

func (r *podReport) fail(msg string) { r.Errors = append(r.Errors, msg) }

// nativeProbeWarnings flags containers that declare the same probe type in
// the pod spec too: the kubelet would run it as well, probing twice.
func nativeProbeWarnings(ref spec.PodRef, probes spec.PodProbes, ps *corev1.PodSpec) []string {
	var out []string
	for _, c := range append(append([]corev1.Container{}, ps.InitContainers...), ps.Containers...) {
		cp, ok := probes[c.Name]
		if !ok {
			continue
		}
		native := spec.ContainerProbes{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe}
		for _, t := range probe.Types {
			if cp.Get(t) != nil && native.Get(t) != nil {
				out = append(out, fmt.Sprintf("pod %s: container %q: %s is also set in the pod spec; the kubelet will run it too",
					ref, c.Name, spec.FieldName(t)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// report checks every pod, prints the outcome and returns the exit status.
func (o validateOptions) report(docs []*podDoc, stdout, stderr io.Writer) int {
	code := validateOK
	for i, d := range docs {
		r := check(d)
		var err error
		if o.output == "json" {
			err = r.writeJSON(stdout)
		} else {
			err = r.writeText(stdout, i > 0)
		}
		if err != nil {
			fmt.Fprintf(stderr, "probelet validate: %v\n", err)
			return validateUsage
		}
		for _, w := range r.Warnings {
			fmt.Fprintln(stderr, "warning: "+w)
		}
		for _, e := range r.Errors {
			fmt.Fprintln(stderr, e)
		}
		if len(r.Errors) > 0 {
			code = validateInvalid
		}
	}
	return code
}

// writeJSON prints the stable JSON object, with empty lists rather than null.
func (r *podReport) writeJSON(w io.Writer) error {
	if r.Errors == nil {
		r.Errors = []string{}
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeText prints the pod's valid containers with their probes in
// `kubectl describe` style; rejected containers are named with a pointer
// to the errors.
func (r *podReport) writeText(w io.Writer, separate bool) error {
	var b strings.Builder
	if separate {
		b.WriteString("\n")
	}
	b.WriteString(r.doc.title() + "\n")
	for _, name := range r.containerNames() {
		cp, ok := r.Containers[name]
		if !ok {
			fmt.Fprintf(&b, "  Container %s: INVALID (%s, on stderr)\n", name, plural(r.errs.ForContainer(name).Len(), "error"))
			continue
		}
		fmt.Fprintf(&b, "  Container %s\n", name)
		writeProbes(&b, cp)
	}
	if len(r.containerNames()) == 0 {
		b.WriteString("  (no valid probes)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// containerNames lists valid and rejected containers, sorted; the
// annotation-wide entry is left out.
func (r *podReport) containerNames() []string {
	seen := map[string]bool{}
	for name := range r.Containers {
		seen[name] = true
	}
	for _, name := range r.errs.Containers() {
		if name != spec.PodWide {
			seen[name] = true
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func writeProbes(b *strings.Builder, cp spec.ContainerProbes) {
	if cp.Empty() {
		b.WriteString("    (no probes)\n")
		return
	}
	for _, t := range probe.Types {
		if p := cp.Get(t); p != nil {
			fmt.Fprintf(b, "    %-11s %s\n", t.String()+":", spec.Describe(p))
		}
	}
}

// plural renders "1 error", "2 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

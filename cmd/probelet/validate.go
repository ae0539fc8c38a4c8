package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/probespec/manifest"
)

// Exit statuses of `probelet validate`.
const (
	validateOK      = 0
	validateInvalid = 1
	validateUsage   = 2
)

const validateUsageText = `Usage: probelet validate [-o text|json] [--pod NAMESPACE/NAME] [FILE|-]

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
		ref := probespec.PodRef{Name: o.pod}
		if ns, name, ok := strings.Cut(o.pod, "/"); ok {
			ref = probespec.PodRef{Namespace: ns, Name: name}
		}
		for _, d := range docs {
			d.Ref = ref
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
		if wanted(d) {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		return docs
	}
	for _, d := range docs {
		if !wanted(d) {
			fmt.Fprintf(stderr, "note: %s has no %s annotation, skipped\n", d.title(), probespec.AnnotationProbes)
		}
	}
	return kept
}

// wanted tells whether a pod of a multi-document manifest is reported:
// it uses probelet, or means to, or could not be read.
func wanted(d *podDoc) bool { return d.HasAnnotation || d.Misplaced || d.Err != nil }

// parseValidateArgs reads flags and the optional FILE; ok is false when the
// command is done (help, or a usage error with its exit code).
func parseValidateArgs(args []string, stderr io.Writer) (validateOptions, int, bool) {
	var o validateOptions
	fs := pflag.NewFlagSet("validate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprint(stderr, validateUsageText)
		fs.PrintDefaults()
	}
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	fs.StringVar(&o.pod, "pod", "", "name the pod NAMESPACE/NAME in messages (default: from the manifest)")
	if err := fs.Parse(doubleDash(args, fs)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return o, validateOK, false
		}
		// pflag leaves reporting to the caller under ContinueOnError.
		fmt.Fprintln(stderr, err)
		fs.Usage()
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

// doubleDash keeps the single-dash long flags of the first releases
// (-pod NS/NAME, -help, --o json) working: Go's flag package took both
// spellings, pflag reads "-pod" as the shorthands p, o and d.
func doubleDash(args []string, fs *pflag.FlagSet) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		switch {
		case a == "--o" || strings.HasPrefix(a, "--o="):
			a = "--output" + strings.TrimPrefix(a, "--o")
		case len(name) > 1 && !strings.HasPrefix(a, "--") && strings.HasPrefix(a, "-") &&
			(fs.Lookup(name) != nil || name == "help"):
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
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

// podDoc is one pod to check: from a manifest, or a bare annotation value
// (Kind empty, no Spec).
type podDoc struct{ manifest.Pod }

// title heads the pod's text output.
func (d *podDoc) title() string {
	switch {
	case d.Kind == "" && d.Err != nil:
		return "Manifest (unreadable)"
	case d.Kind == "":
		return "Annotation (pod " + d.Ref.String() + ")"
	case d.Kind == "Pod":
		return "Pod " + d.Ref.String()
	}
	return d.Kind + " " + d.Ref.String() + " (pod template)"
}

// podDocs finds the pods to check: those of a manifest, or the input
// itself as a bare annotation value (Parse then explains any syntax error).
func podDocs(data []byte) ([]*podDoc, error) {
	pods, isManifest, err := manifest.Read(data)
	if err != nil {
		return nil, err
	}
	if !isManifest {
		return []*podDoc{{manifest.Pod{Annotation: string(data), HasAnnotation: true}}}, nil
	}
	docs := make([]*podDoc, len(pods))
	for i := range pods {
		docs[i] = &podDoc{pods[i]}
	}
	return docs, nil
}

// podReport is the outcome for one pod; its JSON form is the stable output
// of `-o json`.
type podReport struct {
	Pod        string              `json:"pod"`
	Containers probespec.PodProbes `json:"containers"`
	Errors     []string            `json:"errors"`
	Warnings   []string            `json:"warnings"`
	doc        *podDoc
	errs       probespec.ErrorList
}

// check applies the manifest's and the spec's policy to one pod.
func check(d *podDoc) *podReport {
	r := &podReport{Pod: d.Ref.String(), Containers: probespec.PodProbes{}, doc: d}
	if problem := d.Problem(); problem != "" {
		r.Errors = append(r.Errors, problem)
		return r
	}
	c := d.Check()
	r.Containers, r.errs, r.Warnings = c.Probes, c.Errors, c.Warnings
	r.Errors = append(r.Errors, c.Errors.Strings()...)
	if problem := d.OriginProblem(); problem != "" {
		r.Errors = append(r.Errors, problem)
	}
	return r
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
	names := r.containerNames()
	for _, name := range names {
		cp, ok := r.Containers[name]
		if !ok {
			fmt.Fprintf(&b, "  Container %s: INVALID (%s, on stderr)\n", name, plural(r.errs.ForContainer(name).Len(), "error"))
			continue
		}
		fmt.Fprintf(&b, "  Container %s\n", name)
		writeProbes(&b, cp)
	}
	if len(names) == 0 {
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
		if name != probespec.PodWide {
			seen[name] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func writeProbes(b *strings.Builder, cp probespec.ContainerProbes) {
	if cp.Empty() {
		b.WriteString("    (no probes)\n")
		return
	}
	for _, t := range probespec.Types {
		if p := cp.Get(t); p != nil {
			fmt.Fprintf(b, "    %-11s %s\n", t.String()+":", probespec.Describe(p))
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

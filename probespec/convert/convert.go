package convert

import (
	"bytes"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Result is the outcome of converting one input.
type Result struct {
	// Output is the converted input; the input itself when nothing moved.
	Output []byte
	// Changes are the converted pod templates, in input order.
	Changes []Change
}

// Changed reports whether any probe moved.
func (r Result) Changed() bool { return len(r.Changes) > 0 }

// Change is one pod template whose probes moved.
type Change struct {
	// Doc is the document's number in the input, from 1.
	Doc int
	// Object is "Kind namespace/name" of the object owning the template.
	Object string
	// Moved lists the moved probes as "container: livenessProbe, ...".
	Moved []string
	// Merged lists probes that were already in the annotation (dropped
	// from the spec), in the same form.
	Merged []string
	// GateAdded tells whether the probelet.io/ready readiness gate was added.
	GateAdded bool
}

// separator is a YAML document separator line ("---", maybe followed by a
// comment or content).
var separator = regexp.MustCompile(`^---(\s|$)`)

// chunk is one document's text, or a separator line.
type chunk struct {
	text      string
	separator bool
	line      int // first line, from 1
}

// split cuts a YAML stream into documents and separator lines, keeping
// every byte.
func split(data string) []chunk {
	var out []chunk
	var cur strings.Builder
	start, n := 1, 0
	for line := range strings.Lines(data) {
		n++
		if separator.MatchString(line) {
			out = append(out, chunk{text: cur.String(), line: start})
			cur.Reset()
			out = append(out, chunk{text: line, separator: true, line: n})
			start = n + 1
			continue
		}
		cur.WriteString(line)
	}
	return append(out, chunk{text: cur.String(), line: start})
}

// hasContent reports whether a document holds more than blank lines and
// comments.
func hasContent(text string) bool {
	for line := range strings.Lines(text) {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// Convert moves the probes of every pod template in data, a stream of YAML
// or JSON documents. On any error nothing is returned but the errors:
// every document is checked, so all of them are reported at once.
func Convert(data []byte) (Result, ErrorList) {
	var res Result
	var errs ErrorList
	var out bytes.Buffer
	doc := 0
	for _, c := range split(string(data)) {
		if c.separator || !hasContent(c.text) {
			out.WriteString(c.text)
			continue
		}
		doc++
		text, changes, derrs := convertDocument(c.text, doc, c.line)
		errs = append(errs, derrs...)
		res.Changes = append(res.Changes, changes...)
		out.WriteString(text)
	}
	if len(errs) > 0 {
		return Result{}, errs
	}
	res.Output = out.Bytes()
	if !res.Changed() {
		res.Output = data
	}
	return res, nil
}

// convertDocument converts one document and returns its new text (the
// same text when nothing moved).
func convertDocument(text string, doc, firstLine int) (string, []Change, ErrorList) {
	c := &converter{doc: doc, lineOffset: firstLine - 1}
	root, err := yaml.Parse(text)
	if err != nil {
		return text, nil, ErrorList{{Doc: doc, Detail: "cannot read the document: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	node := root.YNode()
	if node.Kind != yaml.MappingNode {
		return text, nil, ErrorList{{Doc: doc, Line: c.line(node), Detail: "not a Kubernetes object (a mapping with apiVersion and kind)"}}
	}
	c.object(node, "")
	if len(c.errs) > 0 || len(c.changes) == 0 {
		return text, nil, c.errs
	}
	var out string
	if isJSON(text) {
		out, err = encodeJSON(node, text)
	} else {
		out, err = encodeYAML(root, text)
	}
	if err != nil {
		return text, nil, ErrorList{{Doc: doc, Detail: "cannot write the converted document: " + err.Error()}}
	}
	return out, c.changes, nil
}

// isJSON reports whether a document is written as JSON.
func isJSON(text string) bool {
	for line := range strings.Lines(text) {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return strings.HasPrefix(t, "{")
		}
	}
	return false
}

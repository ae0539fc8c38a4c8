package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// encodeYAML re-encodes the edited document and puts back every line the
// edit did not touch as it was written: the encoder normalizes indentation
// and spacing and drops blank lines. Lines the edit added take the
// indentation of the original lines around them. If the result does not
// read back as the edited document, the plain encoding is used.
func encodeYAML(root *yaml.RNode, orig string) (string, error) {
	style := yaml.SequenceIndentStyle(yaml.DeriveSeqIndentStyle(orig))
	enc, err := yaml.MarshalWithOptions(root.Document(), &yaml.EncoderOptions{SeqIndent: style})
	if err != nil {
		return "", err
	}
	out, ok := restore(orig, string(enc))
	if !ok || !sameYAML(out, string(enc)) {
		out = string(enc)
	}
	return out, nil
}

// restore aligns the encoded lines with the original ones, ignoring
// spacing, and keeps the original text of every aligned line and every
// blank original line. An added line is indented like the nearest aligned
// line before it that the encoder indented the same way.
func restore(orig, enc string) (string, bool) {
	a, b := lines(orig), lines(enc)
	// Insertions first: a blank line the encoder dropped stays after what
	// the edit added in front of it.
	ops, ok := align(a, b, normalized, true)
	if !ok {
		return "", false
	}
	unit := indentUnit(a)
	var out strings.Builder
	// level maps the encoder's indentation (2 a step) to the original's,
	// as seen at the last aligned line with that indentation.
	level := map[int]int{}
	for _, o := range ops {
		switch o.kind {
		case '=':
			out.WriteString(a[o.a] + "\n")
			level[indent(b[o.b])] = indent(a[o.a])
		case '-':
			if strings.TrimSpace(a[o.a]) == "" {
				out.WriteString(a[o.a] + "\n")
			}
		case '+':
			n := mapIndent(level, indent(b[o.b]), unit)
			out.WriteString(strings.Repeat(" ", n) + strings.TrimLeft(b[o.b], " ") + "\n")
		}
	}
	text := out.String()
	if !strings.HasSuffix(orig, "\n") {
		text = strings.TrimSuffix(text, "\n")
	}
	return text, true
}

// mapIndent is the original indentation for the encoder's indentation e:
// as seen, or a step of unit per encoder step below the deepest level seen
// above it.
func mapIndent(level map[int]int, e, unit int) int {
	if n, ok := level[e]; ok {
		return n
	}
	base, at := 0, 0
	for enc, orig := range level {
		if enc < e && enc >= base {
			base, at = enc, orig
		}
	}
	return at + (e-base)/2*unit
}

// sameYAML reports whether two documents read as the same data.
func sameYAML(a, b string) bool {
	var va, vb any
	if yaml.Unmarshal([]byte(a), &va) != nil || yaml.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// encodeJSON writes a JSON document back with the original's indentation
// (compact when the original is on one line) and key order.
func encodeJSON(n *yaml.Node, orig string) (string, error) {
	body := strings.TrimSpace(orig)
	unit := ""
	if strings.Contains(body, "\n") {
		unit = "  "
		for _, l := range lines(body)[1:] {
			if w := l[:len(l)-len(strings.TrimLeft(l, " \t"))]; w != "" {
				unit = w
				break
			}
		}
	}
	var b bytes.Buffer
	if err := writeJSON(&b, n, unit, ""); err != nil {
		return "", err
	}
	// Whatever surrounded the object (leading comments, blank lines) stays.
	start := strings.Index(orig, body)
	return orig[:start] + b.String() + orig[start+len(body):], nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node, unit, at string) error {
	inner := at + unit
	nl, sep := "", ","
	if unit != "" {
		nl, sep = "\n", ",\n"
	}
	colon := ":"
	if unit != "" {
		colon = ": "
	}
	switch n.Kind {
	case yaml.DocumentNode:
		return writeJSON(b, n.Content[0], unit, at)
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteString("{" + nl)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(inner + jsonString(n.Content[i].Value) + colon)
			if err := writeJSON(b, n.Content[i+1], unit, inner); err != nil {
				return err
			}
		}
		b.WriteString(nl + at + "}")
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteString("[" + nl)
		for i, c := range n.Content {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(inner)
			if err := writeJSON(b, c, unit, inner); err != nil {
				return err
			}
		}
		b.WriteString(nl + at + "]")
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool":
			b.WriteString(n.Value)
		case "!!null":
			b.WriteString("null")
		default:
			b.WriteString(jsonString(n.Value))
		}
	default:
		return fmt.Errorf("line %d: not JSON (YAML node kind %v)", n.Line, n.Kind)
	}
	return nil
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

package probespec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// toJSON turns the annotation value into JSON. JSON is used as is (YAML
// parsers reject some valid JSON, e.g. tab indentation); anything else is
// read as YAML, rejecting duplicate keys and more than one document (which
// the YAML parser would otherwise drop silently).
func toJSON(value string) ([]byte, error) {
	data := []byte(value)
	if json.Valid(data) {
		return data, nil
	}
	docs, yerr := yamlDocuments(data)
	switch {
	case yerr != nil && looksLikeJSON(data):
		return nil, jsonSyntaxError(data)
	case yerr != nil:
		msg := strings.TrimPrefix(yerr.Error(), "error converting YAML to JSON: ")
		return nil, fmt.Errorf("invalid YAML: %s", strings.ReplaceAll(msg, "\n  ", " "))
	case len(docs) > 1:
		return nil, fmt.Errorf("must be a single YAML document, found %d", len(docs))
	case len(docs) == 0:
		return []byte("null"), nil
	}
	return docs[0], nil
}

// yamlDocuments converts each non-empty YAML document to JSON, rejecting
// duplicate keys.
func yamlDocuments(data []byte) ([][]byte, error) {
	return YAMLDocuments(data, yaml.YAMLToJSONStrict)
}

// YAMLDocuments splits a YAML (or JSON) stream into its non-empty
// documents, each converted to JSON with convert (yaml.YAMLToJSON or its
// strict variant).
func YAMLDocuments(data []byte, convert func([]byte) ([]byte, error)) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		converted, err := convert(chunk)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(converted, []byte("null")) {
			docs = append(docs, converted)
		}
	}
}

// looksLikeJSON reports whether the value was meant as JSON, so a syntax
// error is explained in JSON terms rather than YAML's.
func looksLikeJSON(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[' || t[0] == '"')
}

// jsonSyntaxError explains why data is not JSON, with a line and column.
func jsonSyntaxError(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	line, col := position(data, se.Offset)
	return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	if col < 1 {
		col = 1
	}
	return line, col
}

// containerDoc is one container's undecoded entry, in document order.
type containerDoc struct {
	name string
	raw  json.RawMessage
	// duplicate is set when the name appeared more than once.
	duplicate bool
}

// splitContainers reads the top level: an object mapping container name to
// that container's probes. Each entry is decoded on its own later so one
// bad container does not hide the others.
func splitContainers(data []byte) (map[string]*containerDoc, error) {
	var top map[string]json.RawMessage
	strictErrs, err := sjson.UnmarshalStrict(data, &top)
	if err != nil || top == nil {
		return nil, errors.New("must be an object mapping container names to their probes")
	}
	docs := make(map[string]*containerDoc, len(top))
	for name, raw := range top {
		docs[name] = &containerDoc{name: name, raw: raw}
	}
	for _, se := range strictErrs {
		var fe sjson.FieldError
		if errors.As(se, &fe) {
			if d, ok := docs[fe.FieldPath()]; ok {
				d.duplicate = true
			}
		}
	}
	return docs, nil
}

// decodeContainer strictly decodes one container's probes. A decoding
// failure ends the container's checks; unknown or duplicate fields are
// reported but the rest is still decoded so validation can say more.
func decodeContainer(raw json.RawMessage) (ContainerProbes, field.ErrorList, bool) {
	var cp ContainerProbes
	strictErrs, err := sjson.UnmarshalStrict(raw, &cp)
	if err != nil {
		return cp, field.ErrorList{decodeError(err)}, false
	}
	var errs field.ErrorList
	for _, se := range strictErrs {
		errs = append(errs, strictError(se))
	}
	return cp, errs, true
}

// decodeError turns a JSON decoding failure into a field error at the
// offending field (type mismatches carry their path).
func decodeError(err error) *field.Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := jsonPath(te.Field)
		detail := fmt.Sprintf("must be %s, not %s", typeName(te), te.Value)
		if strings.HasSuffix(path, "grpc.port") && te.Value == "string" {
			detail = "must be a port number: gRPC probes do not resolve named ports"
		}
		return fieldError(field.ErrorTypeInvalid, path, field.OmitValueType{}, detail)
	}
	return fieldError(field.ErrorTypeInvalid, "", field.OmitValueType{}, strings.TrimPrefix(err.Error(), "json: "))
}

// jsonPath drops the Go names of embedded structs (ProbeHandler) that
// encoding/json puts in a type error's path; Kubernetes JSON names are
// lowerCamel, so a capitalised segment is never one the user wrote.
func jsonPath(goPath string) string {
	parts := strings.Split(goPath, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && unicode.IsUpper(rune(p[0])) {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, ".")
}

// typeName names the Go type a JSON value should have had in user terms.
func typeName(te *json.UnmarshalTypeError) string {
	if te.Type == nil {
		return "another type"
	}
	switch te.Type.Kind().String() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer (" + te.Type.String() + ")"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "a list"
	case "struct", "map", "ptr":
		return "an object"
	}
	return te.Type.String()
}

// strictError turns an unknown or duplicate field into a field error.
func strictError(err error) *field.Error {
	var fe sjson.FieldError
	if !errors.As(err, &fe) {
		return fieldError(field.ErrorTypeInvalid, "", field.OmitValueType{}, err.Error())
	}
	if strings.HasPrefix(err.Error(), "duplicate field") {
		return fieldError(field.ErrorTypeDuplicate, fe.FieldPath(), field.OmitValueType{}, "set more than once")
	}
	detail := "unknown field"
	if hint := suggest(fe.FieldPath()); hint != "" {
		detail += fmt.Sprintf(" (did you mean %q?)", hint)
	}
	return fieldError(field.ErrorTypeForbidden, fe.FieldPath(), "", detail)
}

// fieldError builds a field error at a dotted JSON path such as
// "livenessProbe.httpGet.httpHeaders[0].nam" (the decoders already spell
// paths the way field.Path renders them); an empty path means the value as a
// whole.
func fieldError(t field.ErrorType, path string, value any, detail string) *field.Error {
	return &field.Error{Type: t, Field: path, BadValue: value, Detail: detail}
}

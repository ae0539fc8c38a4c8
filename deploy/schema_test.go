package deploy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// schemaFile holds the OpenAPI v3 schemas of the kinds deploy/ renders, from
// the Kubernetes release matching k8s.io/api (see doc.go's go:generate).
const schemaFile = "testdata/openapi/schemas.json"

const refPrefix = "#/components/schemas/"

// openAPI validates objects against Kubernetes' published OpenAPI schemas
// twice: kube-openapi's validator (types, formats, enums, required fields)
// and the structured-merge-diff type converter the API server uses for
// server-side apply (unknown fields, list and map keys).
type openAPI struct {
	mu       sync.Mutex // guards expanded
	schemas  map[string]*spec.Schema
	byGVK    map[schema.GroupVersionKind]string
	expanded map[string]*spec.Schema
	types    managedfields.TypeConverter
}

var (
	loadOnce   sync.Once
	loaded     *openAPI
	loadFailed error
)

// kubeOpenAPI loads schemaFile once for all tests.
func kubeOpenAPI() (*openAPI, error) {
	loadOnce.Do(func() { loaded, loadFailed = loadOpenAPI(schemaFile) })
	return loaded, loadFailed
}

func loadOpenAPI(path string) (*openAPI, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Components struct {
			Schemas map[string]*spec.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	o := &openAPI{schemas: doc.Components.Schemas, expanded: map[string]*spec.Schema{}}
	if o.byGVK, err = indexGVK(o.schemas); err != nil {
		return nil, err
	}
	if o.types, err = managedfields.NewTypeConverter(o.schemas, false); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// indexGVK maps each kind to its schema through the
// x-kubernetes-group-version-kind extension.
func indexGVK(schemas map[string]*spec.Schema) (map[schema.GroupVersionKind]string, error) {
	out := map[schema.GroupVersionKind]string{}
	for name, s := range schemas {
		raw, ok := s.Extensions["x-kubernetes-group-version-kind"]
		if !ok {
			continue
		}
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		var gvks []schema.GroupVersionKind
		if err := json.Unmarshal(b, &gvks); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, gvk := range gvks {
			out[gvk] = name
		}
	}
	return out, nil
}

// validate checks one rendered object and returns every violation.
func (o *openAPI) validate(obj rendered) error {
	var u map[string]any
	if err := json.Unmarshal(obj.json, &u); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	gvk := (&unstructured.Unstructured{Object: u}).GroupVersionKind()
	name, ok := o.byGVK[gvk]
	if !ok {
		return fmt.Errorf("no schema for %s", gvk)
	}
	s, err := o.expand(name, nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range validate.NewSchemaValidator(s, nil, "", strfmt.Default).Validate(u).Errors {
		errs = append(errs, fmt.Errorf("openapi: %w", e))
	}
	if _, err := o.types.ObjectToTyped(&unstructured.Unstructured{Object: u}); err != nil {
		errs = append(errs, fmt.Errorf("structured-merge-diff: %w", err))
	}
	return errors.Join(errs...)
}

// expand returns the named schema with every $ref inlined, because
// kube-openapi's validator does not follow references. Results are shared:
// expanded schemas are never modified.
func (o *openAPI) expand(name string, path []string) (*spec.Schema, error) {
	if s, ok := o.expanded[name]; ok {
		return s, nil
	}
	for _, p := range path {
		if p == name {
			return nil, fmt.Errorf("recursive schema %s", strings.Join(append(path, name), " -> "))
		}
	}
	s, ok := o.schemas[name]
	if !ok {
		return nil, fmt.Errorf("schema %s not found", name)
	}
	out, err := o.inline(s, append(path, name))
	if err == nil {
		o.expanded[name] = out
	}
	return out, err
}

// inline copies s with references replaced by their expanded schemas.
func (o *openAPI) inline(s *spec.Schema, path []string) (*spec.Schema, error) {
	if ref := s.Ref.String(); ref != "" {
		return o.expand(strings.TrimPrefix(ref, refPrefix), path)
	}
	c := *s
	// IntOrString is {format: int-or-string, oneOf: [integer, string]}
	// without a type; kube-openapi's type check rejects a format without a
	// type for numbers, and the oneOf already says it all.
	if c.Format == "int-or-string" {
		c.Format = ""
	}
	var err error
	if c.Properties, err = o.inlineMap(s.Properties, path); err != nil {
		return nil, err
	}
	for _, list := range []*[]spec.Schema{&c.AllOf, &c.AnyOf, &c.OneOf} {
		if *list, err = o.inlineList(*list, path); err != nil {
			return nil, err
		}
	}
	if err := o.inlineChildren(&c, path); err != nil {
		return nil, err
	}
	return &c, nil
}

// inlineChildren handles items, additionalProperties and not.
func (o *openAPI) inlineChildren(c *spec.Schema, path []string) error {
	var err error
	if c.Items != nil && c.Items.Schema != nil {
		items := *c.Items
		if items.Schema, err = o.inline(c.Items.Schema, path); err != nil {
			return err
		}
		c.Items = &items
	}
	if c.AdditionalProperties != nil && c.AdditionalProperties.Schema != nil {
		ap := *c.AdditionalProperties
		if ap.Schema, err = o.inline(c.AdditionalProperties.Schema, path); err != nil {
			return err
		}
		c.AdditionalProperties = &ap
	}
	if c.Not != nil {
		c.Not, err = o.inline(c.Not, path)
	}
	return err
}

func (o *openAPI) inlineMap(in map[string]spec.Schema, path []string) (map[string]spec.Schema, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]spec.Schema, len(in))
	for k, v := range in {
		s, err := o.inline(&v, path)
		if err != nil {
			return nil, err
		}
		out[k] = *s
	}
	return out, nil
}

func (o *openAPI) inlineList(in []spec.Schema, path []string) ([]spec.Schema, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]spec.Schema, len(in))
	for i := range in {
		s, err := o.inline(&in[i], path)
		if err != nil {
			return nil, err
		}
		out[i] = *s
	}
	return out, nil
}

// Command schemagen extracts the OpenAPI v3 schemas of the kinds deploy/
// renders from the Kubernetes release whose API the module builds against,
// taken from the k8s.io/kubernetes module through the Go module proxy
// (api/openapi-spec/v3). It keeps only the kinds' schema closure and drops
// descriptions, so the committed file stays small; the test validates the
// rendered manifests against it offline.
//
//	go run ./deploy/internal/schemagen -version v1.37.1 -out deploy/testdata/openapi/schemas.json
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// roots are the kinds the kustomizations render.
var roots = []string{
	"io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
	"io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
	"io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
	"io.k8s.api.apps.v1.DaemonSet",
	"io.k8s.api.apps.v1.Deployment",
	"io.k8s.api.core.v1.ConfigMap",
	"io.k8s.api.core.v1.Namespace",
	"io.k8s.api.core.v1.Service",
	"io.k8s.api.core.v1.ServiceAccount",
	"io.k8s.api.policy.v1.PodDisruptionBudget",
	"io.k8s.api.rbac.v1.ClusterRole",
	"io.k8s.api.rbac.v1.ClusterRoleBinding",
	"io.k8s.api.rbac.v1.Role",
	"io.k8s.api.rbac.v1.RoleBinding",
	"io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
}

// specFiles hold the roots' API groups in the release tree.
var specFiles = []string{
	"api/openapi-spec/v3/api__v1_openapi.json",
	"api/openapi-spec/v3/apis__admissionregistration.k8s.io__v1_openapi.json",
	"api/openapi-spec/v3/apis__apiregistration.k8s.io__v1_openapi.json",
	"api/openapi-spec/v3/apis__apps__v1_openapi.json",
	"api/openapi-spec/v3/apis__policy__v1_openapi.json",
	"api/openapi-spec/v3/apis__rbac.authorization.k8s.io__v1_openapi.json",
}

const refPrefix = "#/components/schemas/"

func main() {
	version := flag.String("version", "", "k8s.io/kubernetes module version, e.g. v1.37.1")
	out := flag.String("out", "", "output file")
	flag.Parse()
	if err := run(*version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

func run(version, out string) error {
	if version == "" || out == "" {
		return fmt.Errorf("-version and -out are required")
	}
	dir, err := moduleDir("k8s.io/kubernetes@" + version)
	if err != nil {
		return err
	}
	all, err := loadSchemas(dir)
	if err != nil {
		return err
	}
	kept, err := closure(all, roots)
	if err != nil {
		return err
	}
	for _, s := range kept {
		strip(s)
	}
	doc := map[string]any{
		"info":       map[string]any{"title": "Kubernetes", "version": version, "x-source": "k8s.io/kubernetes@" + version + " " + strings.Join(specFiles, ", ")},
		"openapi":    "3.0.0",
		"components": map[string]any{"schemas": kept},
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// moduleDir downloads a module through the Go module proxy (or finds it in
// the module cache) and returns its directory.
func moduleDir(mod string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go mod download %s: %v: %s%s", mod, err, stderr.String(), stdout.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return "", err
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, info.Error)
	}
	return info.Dir, nil
}

func loadSchemas(dir string) (map[string]map[string]any, error) {
	all := map[string]map[string]any{}
	for _, f := range specFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for k, v := range doc.Components.Schemas {
			all[k] = v
		}
	}
	return all, nil
}

// closure returns the named schemas and every schema they reference.
func closure(all map[string]map[string]any, names []string) (map[string]map[string]any, error) {
	kept := map[string]map[string]any{}
	todo := append([]string(nil), names...)
	for len(todo) > 0 {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if _, ok := kept[name]; ok {
			continue
		}
		s, ok := all[name]
		if !ok {
			return nil, fmt.Errorf("schema %s not found", name)
		}
		kept[name] = s
		todo = append(todo, refs(s)...)
	}
	return kept, nil
}

// refs lists the schema names referenced anywhere below v.
func refs(v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s, ok := t[k].(string); ok && k == "$ref" {
				out = append(out, strings.TrimPrefix(s, refPrefix))
				continue
			}
			out = append(out, refs(t[k])...)
		}
	case []any:
		for _, e := range t {
			out = append(out, refs(e)...)
		}
	}
	return out
}

// strip removes descriptions from a schema and its subschemas; property
// maps are walked as maps, so a property named "description" survives.
func strip(s map[string]any) {
	delete(s, "description")
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			stripAny(p)
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		stripAny(s[k])
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[k].([]any); ok {
			for _, e := range list {
				stripAny(e)
			}
		}
	}
}

func stripAny(v any) {
	if m, ok := v.(map[string]any); ok {
		strip(m)
	}
}

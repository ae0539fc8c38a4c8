//go:build e2e

package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/probespec"
)

// convertFixtures are `probelet convert`'s golden inputs that convert:
// every kind it handles, YAML and JSON.
var convertFixtures = []string{"pod.yaml", "pod.json", "deployment.yaml", "statefulset.yaml", "daemonset.yaml",
	"replicaset.yaml", "job.yaml", "cronjob.yaml", "podtemplate.yaml", "list.json", "multi.yaml", "merge.yaml", "converted.yaml"}

// TestConvertServerDryRun: what `probelet convert` writes is accepted by a
// real API server (kubectl apply --dry-run=server: defaulting, validation
// and admission), and the objects the server returns carry the annotation
// and the readiness gate and no probe of their own; the fixtures are valid
// before the conversion too. A probe on a plain init container, which
// convert refuses, is refused by the API server as well.
func TestConvertServerDryRun(t *testing.T) {
	t.Parallel()
	c := cluster.Start(t)
	for _, ns := range []string{"shop", "data", "finance"} {
		if _, err := c.Kubectl("create", "namespace", ns); err != nil {
			t.Fatal(err)
		}
	}
	fixtures := filepath.Join(repoRoot(), "cmd", "probelet", "testdata", "convert")
	out := t.TempDir()
	for _, name := range convertFixtures {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(fixtures, name)
			if _, err := c.Kubectl("apply", "--dry-run=server", "-f", in); err != nil {
				t.Fatalf("the fixture itself: %v", err)
			}
			converted := filepath.Join(out, name)
			cmd := exec.Command(bins.probelet, "convert", in)
			data, err := cmd.Output()
			if err != nil {
				t.Fatalf("probelet convert %s: %v", name, err)
			}
			if err := os.WriteFile(converted, data, 0o644); err != nil {
				t.Fatal(err)
			}
			applied, err := c.Kubectl("apply", "--dry-run=server", "-o", "json", "-f", converted)
			if err != nil {
				t.Fatalf("converted: %v\n%s", err, data)
			}
			checkServerObjects(t, applied)
		})
	}
	t.Run("init container probe", func(t *testing.T) {
		_, err := c.Kubectl("apply", "--dry-run=server", "-f", filepath.Join(fixtures, "init-probe.yaml"))
		if err == nil || !strings.Contains(err.Error(), "may not be set for init containers without restartPolicy=Always") {
			t.Errorf("the API server accepted a probe on a plain init container, or said something else: %v", err)
		}
	})
}

// checkServerObjects walks what the dry run returned (one object or a
// List) and checks every pod template: no probe of its own, the annotation
// parsing and matching the spec, the gate where a readiness probe is.
func checkServerObjects(t *testing.T, data []byte) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	templates := 0
	var walk func(o map[string]any)
	walk = func(o map[string]any) {
		if items, ok := o["items"].([]any); ok {
			for _, it := range items {
				walk(it.(map[string]any))
			}
			return
		}
		if tmpl := podTemplateOf(o); tmpl != nil {
			templates++
			checkServerTemplate(t, o["kind"].(string), tmpl)
		}
	}
	walk(obj)
	if templates == 0 {
		t.Errorf("the server returned no pod template:\n%s", data)
	}
}

// podTemplateOf returns the object's pod (metadata and spec) or pod template.
func podTemplateOf(o map[string]any) map[string]any {
	get := func(m map[string]any, keys ...string) map[string]any {
		for _, k := range keys {
			next, _ := m[k].(map[string]any)
			if next == nil {
				return nil
			}
			m = next
		}
		return m
	}
	switch o["kind"] {
	case "Pod":
		return o
	case "CronJob":
		return get(o, "spec", "jobTemplate", "spec", "template")
	case "PodTemplate":
		return get(o, "template")
	}
	return get(o, "spec", "template")
}

func checkServerTemplate(t *testing.T, kind string, tmpl map[string]any) {
	t.Helper()
	raw, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var pod struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	var ps struct {
		Containers, InitContainers []map[string]any
		ReadinessGates             []struct{ ConditionType string }
	}
	if err := json.Unmarshal(pod.Spec, &ps); err != nil {
		t.Fatal(err)
	}
	for _, ctr := range append(ps.InitContainers, ps.Containers...) {
		for _, f := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
			if _, ok := ctr[f]; ok {
				t.Errorf("%s: container %v still has its %s", kind, ctr["name"], f)
			}
		}
	}
	anno, ok := pod.Metadata.Annotations[probespec.AnnotationProbes]
	if !ok {
		t.Errorf("%s: no %s annotation on the pod template", kind, probespec.AnnotationProbes)
		return
	}
	probes, errs := probespec.Parse(probespec.PodRef{Name: pod.Metadata.Name}, anno)
	if len(errs) > 0 {
		t.Errorf("%s: the annotation does not parse: %v", kind, errs)
	}
	gated := false
	for _, g := range ps.ReadinessGates {
		gated = gated || g.ConditionType == "probelet.io/ready"
	}
	readiness := false
	for _, cp := range probes {
		readiness = readiness || cp.Readiness != nil
	}
	if gated != readiness {
		t.Errorf("%s: readiness gate %v with readiness probes %v", kind, gated, readiness)
	}
}

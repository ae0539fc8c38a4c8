package webhook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/controller/webhook"
	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/probespec/convert"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := readFixture(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readFixture(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }

// apply applies a decision's patch to raw, as the API server does.
func apply(t *testing.T, raw []byte, d webhook.Decision) []byte {
	t.Helper()
	if d.Patch == nil {
		return raw
	}
	p, err := jsonpatch.DecodePatch(d.Patch)
	if err != nil {
		t.Fatalf("patch %s: %v", d.Patch, err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("applying %s: %v", d.Patch, err)
	}
	return out
}

func decode(t *testing.T, raw []byte) corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMutate(t *testing.T) {
	tests := []struct {
		fixture string
		// wantAnnotation is the probelet.io/probes annotation after the
		// patch ("" when the pod must be left as it is).
		wantAnnotation string
		wantGates      []string
		wantMoved      []string
		wantWarning    string
	}{
		{
			fixture:        "web.json",
			wantAnnotation: `{"app":{"livenessProbe":{"failureThreshold":5,"tcpSocket":{"port":8080}},"readinessProbe":{"httpGet":{"path":"/ready","port":"http"},"timeoutSeconds":2},"startupProbe":{"exec":{"command":["cat","/tmp/started"]},"failureThreshold":30,"periodSeconds":1}},"proxy":{"readinessProbe":{"periodSeconds":5,"tcpSocket":{"port":15000}}}}`,
			wantGates:      []string{"probelet.io/ready"},
			wantMoved:      []string{"proxy: readinessProbe", "app: livenessProbe", "app: readinessProbe", "app: startupProbe"},
		},
		{
			fixture:        "merged.json",
			wantAnnotation: `{"app":{"livenessProbe":{"tcpSocket":{"port":8080}},"readinessProbe":{"tcpSocket":{"port":8080}}}}`,
			wantGates:      []string{"example.com/warm", "probelet.io/ready"},
			wantMoved:      []string{"app: readinessProbe"},
		},
		{
			// As the API server sends it: the spec's probe defaulted, the
			// annotation's as written; the same probe.
			fixture:        "merged-defaulted.json",
			wantAnnotation: `{"app":{"readinessProbe":{"tcpSocket":{"port":8080}}}}`,
			wantGates:      []string{"probelet.io/ready"},
		},
		{fixture: "no-probes.json"},
		{fixture: "foreign-host.json", wantWarning: "spec.containers[0].readinessProbe.httpGet.host"},
		{fixture: "plain-init.json", wantWarning: "Forbidden: probes may not be set for init containers"},
		{fixture: "invalid.json", wantWarning: "periodSeconds"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			raw := fixture(t, tt.fixture)
			d, err := webhook.Mutate(raw)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantWarning != "" {
				if d.Patch != nil || len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], tt.wantWarning) ||
					!strings.Contains(d.Warnings[0], "keeps its kubelet probes") {
					t.Fatalf("decision %+v (patch %s), want the pod left as it is with a warning naming %q", d, d.Patch, tt.wantWarning)
				}
				return
			}
			if len(d.Warnings) > 0 {
				t.Fatalf("warnings %q", d.Warnings)
			}
			if tt.wantAnnotation == "" {
				if d.Patch != nil {
					t.Fatalf("patch %s for a pod without probes", d.Patch)
				}
				return
			}
			before, after := decode(t, raw), decode(t, apply(t, raw, d))
			if got := after.Annotations[probespec.AnnotationProbes]; got != tt.wantAnnotation {
				t.Errorf("annotation\n got %s\nwant %s", got, tt.wantAnnotation)
			}
			var gates []string
			for _, g := range after.Spec.ReadinessGates {
				gates = append(gates, string(g.ConditionType))
			}
			if !slices.Equal(gates, tt.wantGates) {
				t.Errorf("readiness gates %q, want %q", gates, tt.wantGates)
			}
			if !slices.Equal(d.Moved, tt.wantMoved) {
				t.Errorf("moved %q, want %q", d.Moved, tt.wantMoved)
			}
			for _, c := range slices.Concat(after.Spec.InitContainers, after.Spec.Containers) {
				if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil {
					t.Errorf("container %s keeps a kubelet probe", c.Name)
				}
			}
			// Nothing else changed: take the converted fields back out.
			for i := range after.Spec.Containers {
				after.Spec.Containers[i].LivenessProbe = before.Spec.Containers[i].LivenessProbe
				after.Spec.Containers[i].ReadinessProbe = before.Spec.Containers[i].ReadinessProbe
				after.Spec.Containers[i].StartupProbe = before.Spec.Containers[i].StartupProbe
			}
			for i := range after.Spec.InitContainers {
				after.Spec.InitContainers[i].ReadinessProbe = before.Spec.InitContainers[i].ReadinessProbe
			}
			after.Spec.ReadinessGates = before.Spec.ReadinessGates
			after.Annotations[probespec.AnnotationProbes] = before.Annotations[probespec.AnnotationProbes]
			if before.Annotations == nil {
				delete(after.Annotations, probespec.AnnotationProbes)
				if len(after.Annotations) == 0 {
					after.Annotations = nil
				}
			}
			if !reflect.DeepEqual(before, after) {
				t.Errorf("the patch changed more than the probes, the annotation and the gate:\n%s", d.Patch)
			}
		})
	}
}

// TestMutateIsTheConvertCommand: the patched pod is what `probelet
// convert` writes for the same pod (one implementation).
func TestMutateIsTheConvertCommand(t *testing.T) {
	raw := fixture(t, "web.json")
	d, err := webhook.Mutate(raw)
	if err != nil {
		t.Fatal(err)
	}
	res, errs := convert.Convert(raw)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got, want := decode(t, apply(t, raw, d)), decode(t, res.Output)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("webhook:\n%+v\nconvert:\n%+v", got, want)
	}
}

// TestMutateTwiceChangesNothing: a converted pod (a second webhook call,
// a pod converted by hand) gets no patch.
func TestMutateTwiceChangesNothing(t *testing.T) {
	for _, name := range []string{"web.json", "merged.json"} {
		raw := fixture(t, name)
		d, err := webhook.Mutate(raw)
		if err != nil {
			t.Fatal(err)
		}
		again, err := webhook.Mutate(apply(t, raw, d))
		if err != nil || again.Patch != nil || len(again.Warnings) > 0 {
			t.Fatalf("%s: second decision %+v (%v), want none", name, again, err)
		}
	}
}

func TestMutateRefusesWhatIsNotAPod(t *testing.T) {
	if _, err := webhook.Mutate([]byte(`{"spec": "not a pod spec"}`)); err == nil {
		t.Fatal("no error for a pod that cannot be read")
	}
}

package manifest_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/probespec/manifest"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// summary is what a test compares of a Pod.
type summary struct {
	kind, ref, annotation string
	has, misplaced        bool
	containers            int
}

func summarize(p manifest.Pod) summary {
	s := summary{kind: p.Kind, ref: p.Ref.String(), annotation: p.Annotation, has: p.HasAnnotation, misplaced: p.Misplaced}
	if p.Spec != nil {
		s.containers = len(p.Spec.Containers)
	}
	return s
}

func TestRead_FindsPodsInEveryWorkloadShape(t *testing.T) {
	pods, isManifest, err := manifest.Read(readFixture(t, "workloads.yaml"))
	if err != nil || !isManifest {
		t.Fatalf("Read: manifest=%v err=%v", isManifest, err)
	}
	want := []summary{
		{"StatefulSet", "data/db", `{"db": {}}`, true, false, 1},
		{"CronJob", "default/report", `{"report": {}}`, true, false, 1},
		{"PodTemplate", "default/tmpl", "", false, false, 1},
		{"DaemonSet", "default/agent", "", false, true, 1},
	}
	if len(pods) != len(want) {
		t.Fatalf("got %d pods, want %d: %+v", len(pods), len(want), pods)
	}
	for i, w := range want {
		if got := summarize(pods[i]); got != w {
			t.Errorf("pod %d = %+v, want %+v", i, got, w)
		}
	}
}

func TestRead_PodManifestInJSON(t *testing.T) {
	pods, isManifest, err := manifest.Read(readFixture(t, "pod.json"))
	if err != nil || !isManifest || len(pods) != 1 {
		t.Fatalf("Read = %+v, %v, %v", pods, isManifest, err)
	}
	p := pods[0]
	if p.Kind != "Pod" || p.Ref != (probespec.PodRef{Namespace: "default", Name: "api"}) || !p.HasAnnotation ||
		p.Spec.Containers[0].Ports[0].ContainerPort != 8080 {
		t.Errorf("pod = %+v", p)
	}
}

func TestRead_NotAManifest(t *testing.T) {
	for _, in := range []string{
		`{"web": {"livenessProbe": {"tcpSocket": {"port": 80}}}}`,
		"web:\n  readinessProbe: {tcpSocket: {port: 80}}\n",
		`{"kind": {"livenessProbe": {"tcpSocket": {"port": 80}}}}`, // a container named kind
		`{"web": {`,       // broken, and nothing says manifest
		"\t{\"a\": {}}\n", // JSON YAML cannot read
		"",
	} {
		pods, isManifest, err := manifest.Read([]byte(in))
		if isManifest || err != nil || pods != nil {
			t.Errorf("Read(%q) = %v, %v, %v; want not a manifest", in, pods, isManifest, err)
		}
	}
}

func TestRead_UnreadableManifestIsReportedAsAPod(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"broken YAML", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: 1\n", "cannot read the manifest: yaml: line 5"},
		{"wrong field type", "apiVersion: v1\nkind: Pod\nspec:\n  containers: x\n", "cannot read the Pod: json: cannot unmarshal string"},
		{"wrong template type", "kind: Deployment\nspec:\n  template: 5\n", "cannot read the Deployment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods, isManifest, err := manifest.Read([]byte(tc.in))
			if err != nil || !isManifest || len(pods) != 1 || pods[0].Err == nil ||
				!strings.Contains(pods[0].Err.Error(), tc.wantErr) {
				t.Fatalf("Read = %+v, %v, %v; want one pod with error %q", pods, isManifest, err, tc.wantErr)
			}
		})
	}
}

func TestRead_NoPods(t *testing.T) {
	_, isManifest, err := manifest.Read([]byte("apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n---\nkind: Service\n"))
	if !isManifest || !errors.Is(err, manifest.ErrNoPods) {
		t.Errorf("Read: manifest=%v err=%v, want ErrNoPods", isManifest, err)
	}
}

func TestRead_ListItems(t *testing.T) {
	in := `{"apiVersion": "v1", "kind": "List", "items": [
	  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
	  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"probelet.io/probes": "{}"}}, "spec": {"containers": [{"name": "a"}]}},
	  {"apiVersion": "apps/v1", "kind": "DeploymentList", "items": [
	    {"kind": "Deployment", "metadata": {"name": "d", "namespace": "x"}, "spec": {"template": {"spec": {"containers": [{"name": "b"}]}}}}]}]}`
	pods, isManifest, err := manifest.Read([]byte(in))
	if err != nil || !isManifest {
		t.Fatalf("Read: manifest=%v err=%v", isManifest, err)
	}
	want := []summary{{"Pod", "default/p", "{}", true, false, 1}, {"Deployment", "x/d", "", false, false, 1}}
	if len(pods) != len(want) {
		t.Fatalf("got %d pods, want %d: %+v", len(pods), len(want), pods)
	}
	for i, w := range want {
		if got := summarize(pods[i]); got != w {
			t.Errorf("pod %d = %+v, want %+v", i, got, w)
		}
	}
}

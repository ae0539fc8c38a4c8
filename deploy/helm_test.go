package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/probelet/probelet/cmd/probelet/agent"
)

const chartDir = "helm/probelet"

// helmLabels are the labels the chart adds for Helm's tooling; the
// comparison with kustomize ignores exactly these.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

var helmBinary = sync.OnceValues(func() (string, error) {
	if h := os.Getenv("HELM"); h != "" {
		return h, nil
	}
	// Built from the Go module proxy and cached, like the other tools.
	out, err := exec.Command("../hack/tools.sh", "helm").Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools.sh helm: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// helmTemplate renders the chart with values (a YAML document) as `helm
// template` does and returns its objects, or Helm's error.
func helmTemplate(t *testing.T, values string) ([]rendered, error) {
	t.Helper()
	helm, err := helmBinary()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helm, "template", "probelet", chartDir, "--values", file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %w: %s", err, stderr.Bytes())
	}
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(out), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("helm template output: %w", err)
	}
	var objs []rendered
	for _, n := range nodes {
		b, err := n.MarshalJSON()
		if err != nil {
			return nil, err
		}
		objs = append(objs, rendered{id: fmt.Sprintf("%s %s/%s", n.GetKind(), n.GetNamespace(), n.GetName()), json: b})
	}
	return objs, nil
}

// kustomizeHash is the content hash kustomize's configMapGenerator appends
// to a name; the chart appends its own.
var kustomizeHash = regexp.MustCompile(`(probelet-nri-config)-[a-z0-9]{10}\b`)

// normalized turns a rendering into objects by id, without Helm's labels
// and with generated name suffixes made equal.
func normalized(t *testing.T, objs []rendered) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range objs {
		var v map[string]any
		if err := json.Unmarshal(kustomizeHash.ReplaceAll(o.json, []byte("$1-HASH")), &v); err != nil {
			t.Fatalf("%s: %v", o.id, err)
		}
		if meta, ok := v["metadata"].(map[string]any); ok {
			if labels, ok := meta["labels"].(map[string]any); ok {
				for _, l := range helmLabels {
					delete(labels, l)
				}
				if len(labels) == 0 {
					delete(meta, "labels")
				}
			}
		}
		out[kustomizeHash.ReplaceAllString(o.id, "$1-HASH")] = v
	}
	return out
}

// TestHelmChartMatchesKustomize: the chart, with its defaults or with the
// values that match a component or overlay, renders the same objects as
// kustomize does from deploy/, but for Helm's labels; and every rendering
// passes the schemas, strict decoding and the contracts deploy/'s own
// renderings pass.
func TestHelmChartMatchesKustomize(t *testing.T) {
	wrap := func(resources []string, components ...string) string {
		var b strings.Builder
		b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
		for _, r := range resources {
			fmt.Fprintf(&b, "  - ../deploy/%s\n", r)
		}
		if len(components) > 0 {
			b.WriteString("components:\n")
			for _, c := range components {
				fmt.Fprintf(&b, "  - ../deploy/components/%s\n", c)
			}
		}
		return b.String()
	}
	all := []string{"base", "controller"}
	cases := []struct {
		name, values, kustomization string
	}{
		{"defaults", "", wrap(all)},
		{"no controller", "controller: {enabled: false}", wrap([]string{"base"})},
		{"report-only", "agent: {flags: {liveness-action: report}}", wrap(all, "report-only")},
		{"tcp-dial", "agent: {flags: {tcp-mode: dial}}", wrap(all, "tcp-dial")},
		{"metrics-on-all-interfaces", "agent: {flags: {metrics-bind-address: '0.0.0.0:9809'}}", wrap(all, "metrics-on-all-interfaces")},
		{"all components", "agent: {flags: {liveness-action: report, tcp-mode: dial, metrics-bind-address: '0.0.0.0:9809'}}",
			wrap(all, "metrics-on-all-interfaces", "report-only", "tcp-dial")},
		{"preinstalled", "agent: {mode: preinstalled}", wrap([]string{"overlays/preinstalled", "controller"})},
		{"crio", "agent: {runtime: crio}", wrap(all, "crio")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chart, err := helmTemplate(t, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			fsys := memFS(t)
			writeKustomization(t, fsys, "/wrap", tc.kustomization)
			kust, err := build(fsys, "/wrap")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(normalized(t, kust), normalized(t, chart)); diff != "" {
				t.Errorf("the chart differs from kustomize (-kustomize +chart):\n%s", diff)
			}
			objs, err := decodeAll(chart)
			if err != nil {
				t.Fatal(err)
			}
			errs := []error{checkAll(objs)}
			if _, ok := objs.deployments[controllerName]; ok {
				errs = append(errs, checkController(objs))
			}
			if err := errors.Join(errs...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestHelmValues: values beyond what kustomize offers render what they say,
// and bad values fail with an error naming the value.
func TestHelmValues(t *testing.T) {
	cases := []struct {
		name, values string
		want         []string // substrings of the rendering
		wantNot      []string // and ones it must not have
		wantErr      string
	}{
		{name: "a list flag repeats", values: "agent: {flags: {allow-probe-host: [10.0.0.0/8, 192.0.2.1]}}",
			want: []string{`"--allow-probe-host=10.0.0.0/8","--allow-probe-host=192.0.2.1"`}},
		{name: "an empty value is passed", values: "controller: {flags: {metrics-bind-address: ':9900', kubeconfig: ''}}",
			want: []string{`"--kubeconfig="`, `"containerPort":9900`}},
		{name: "another namespace", values: "namespace: {name: probes}",
			want: []string{`"--lease-namespace=probes"`, `system:serviceaccount:probes:probelet'`, `system:serviceaccount:probes:probelet-controller'`,
				`"--webhook-cert-hosts=probelet-webhook.probes.svc,probelet-api.probes.svc"`, `"values":["kube-system","probes"]`}},
		{name: "certificates provided", values: "controller: {flags: {webhook-manage-cert: false}}",
			want: []string{`"--webhook-manage-cert=false"`, `"resourceNames":["probelet-webhook-tls"],"resources":["secrets"],"verbs":["get"]`},
			wantNot: []string{`"resources":["mutatingwebhookconfigurations"],"verbs":["get","update"]`, `"resources":["secrets"],"verbs":["create"]`,
				`"verbs":["get","update"]`}},
		{name: "webhook off", values: "webhook: {enabled: false}", want: []string{`"--webhook-listen="`, `"--webhook-cert-hosts=probelet-api.probelet-system.svc"`}},
		{name: "probe-state API off", values: "probeAPI: {enabled: false}\nagent: {flags: {state-listen: null}}",
			want:    []string{`"--probe-api-listen="`, `"--webhook-cert-hosts=probelet-webhook.probelet-system.svc"`},
			wantNot: []string{`"kind":"APIService"`, `"name":"probe-api"`, `"nodes/podprobes"`, `"--state-listen`, `probelet.io/state`, `apiservices`}},
		{name: "a CA injector for the probe-state API", values: "probeAPI: {annotations: {cert-manager.io/inject-ca-from: probelet-system/probelet-webhook}}",
			want: []string{`"annotations":{"cert-manager.io/inject-ca-from":"probelet-system/probelet-webhook"}`}},
		{name: "digest", values: "image: {repository: registry.example.com/probelet, digest: 'sha256:0123'}",
			want: []string{`"image":"registry.example.com/probelet@sha256:0123"`}},
		{name: "the NRI socket in containerd's directory", values: "agent: {hostPaths: {nri: /run/containerd}, flags: {nri-socket: /run/containerd/nri.sock}}",
			want: []string{`"volumeMounts":[{"mountPath":"/run/containerd","mountPropagation":"HostToContainer","name":"containerd","readOnly":true},{"mountPath":"/run/probelet"`}},
		{name: "CRI-O with its socket elsewhere", values: "agent: {runtime: crio, hostPaths: {crio: /run/crio}, flags: {runtime-endpoint: 'unix:///run/crio/crio.sock'}}",
			want:    []string{`"--runtime-endpoint=unix:///run/crio/crio.sock"`, `{"hostPath":{"path":"/run/crio","type":"Directory"},"name":"crio"}`},
			wantNot: []string{`/run/containerd`}},
		{name: "the controller in the node's network", values: "controller: {hostNetwork: true}",
			want: []string{`"hostNetwork":true`, `"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1},"type":"RollingUpdate"}`}},
		{name: "the controller in the pod network", values: "controller: {hostNetwork: false}", wantNot: []string{`"maxSurge":0`}},
		{name: "an unknown runtime", values: "agent: {runtime: docker}", wantErr: "/agent/runtime"},
		{name: "a misspelt flag", values: "agent: {flags: {tcp-mod: dial}}", wantErr: "additional properties 'tcp-mod' not allowed"},
		{name: "a flag of the wrong type", values: "agent: {flags: {kill-guard-burst: many}}", wantErr: "/agent/flags/kill-guard-burst"},
		{name: "an unknown tcp mode", values: "agent: {flags: {tcp-mode: magic}}", wantErr: "/agent/flags/tcp-mode"},
		{name: "no metrics port", values: "agent: {flags: {metrics-bind-address: ''}}", wantErr: "agent.flags.metrics-bind-address"},
		{name: "webhook without a port", values: "controller: {flags: {webhook-listen: ''}}", wantErr: "controller.flags.webhook-listen"},
		{name: "an unknown mode", values: "agent: {mode: sidecar}", wantErr: "/agent/mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := helmTemplate(t, tc.values)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, o := range objs {
				all = append(all, string(o.json))
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.Join(all, "\n"), w) {
					t.Errorf("no %s in the rendering:\n%s", w, strings.Join(all, "\n"))
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(strings.Join(all, "\n"), w) {
					t.Errorf("%s in the rendering", w)
				}
			}
			if _, err := decodeAll(objs); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestHelmValuesNameEveryDaemonFlag: agent.flags in values.yaml and its
// schema list exactly the daemon's flags (but --config, a file the chart
// has no place for, and the hidden, removed ones).
func TestHelmValuesNameEveryDaemonFlag(t *testing.T) {
	fs := pflag.NewFlagSet("probelet", pflag.ContinueOnError)
	agent.NewFlags().Bind(fs)
	var want []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "config" {
			want = append(want, f.Name)
		}
	})
	slices.Sort(want)
	values, schema := chartFlagKeys(t, "agent")
	if !slices.Equal(values, want) {
		t.Errorf("values.yaml agent.flags: %q\nthe daemon's flags: %q", values, want)
	}
	if !slices.Equal(schema, want) {
		t.Errorf("values.schema.json agent.flags: %q\nthe daemon's flags: %q", schema, want)
	}
}

// chartFlagKeys returns the sorted keys of section.flags in values.yaml and
// in values.schema.json.
func chartFlagKeys(t *testing.T, section string) (values, schema []string) {
	t.Helper()
	node, err := yaml.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	flags, err := node.Pipe(yaml.Lookup(section, "flags"))
	if err != nil || flags == nil {
		t.Fatalf("values.yaml has no %s.flags: %v", section, err)
	}
	values, err = flags.Fields()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]struct {
			Properties map[string]struct {
				Properties map[string]any
			}
		}
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	schema = slices.Sorted(maps.Keys(s.Properties[section].Properties["flags"].Properties))
	slices.Sort(values)
	return values, schema
}

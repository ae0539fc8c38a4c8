package probespec_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/testutil/golden"
	"github.com/probelet/probelet/probespec"
)

// render is what a golden file holds: the errors, then the parsed probes.
func render(t *testing.T, probes probespec.PodProbes, errs probespec.ErrorList) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# errors\n")
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	b.WriteString("# probes\n")
	data, err := json.MarshalIndent(probes, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b.Write(data)
	b.WriteString("\n")
	return b.Bytes()
}

// TestParse_Golden parses every testdata/parse/*.in as pod default/web and
// compares errors and probes with the .golden file beside it.
func TestParse_Golden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/parse/*.in")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in")
		t.Run(name, func(t *testing.T) {
			value, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			probes, errs := probespec.Parse(web, string(value))
			got := render(t, probes, errs)
			golden.Check(t, strings.TrimSuffix(in, ".in")+".golden", got)
		})
	}
}

func TestParse_SyntaxErrorIsOneErrorNamingPodAndAnnotation(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"json", `{"app": {"livenessProbe": {"tcpSocket": {"port": 8080}}`,
			"pod default/web: annotation probelet.io/probes: invalid JSON at line 1, column 56: unexpected end of JSON input"},
		{"yaml", "app:\n  livenessProbe: [\n",
			"pod default/web: annotation probelet.io/probes: invalid YAML: yaml: line 2: did not find expected node content"},
		{"not an object", `["app"]`,
			"pod default/web: annotation probelet.io/probes: must be an object mapping container names to their probes"},
		{"empty", ``,
			"pod default/web: annotation probelet.io/probes: must be an object mapping container names to their probes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			probes, errs := probespec.Parse(web, tc.value)
			if probes != nil {
				t.Errorf("probes = %v, want nil", probes)
			}
			if errs.Len() != 1 || errs[0].Error() != tc.want {
				t.Fatalf("errors = %q\nwant [%q]", errs.Strings(), tc.want)
			}
			if errs[0].Container != "" {
				t.Errorf("annotation error names container %q", errs[0].Container)
			}
			// What the daemon shows per container must still say which annotation broke.
			wantShown := strings.TrimPrefix(tc.want, "pod default/web: ")
			if got := errs.ByContainer()[probespec.PodWide]; got != wantShown {
				t.Errorf("ByContainer()[PodWide] = %q, want %q", got, wantShown)
			}
		})
	}
}

func TestParse_UnknownFieldsAreErrors(t *testing.T) {
	runValidation(t, []validationCase{
		{"typo with hint", "livenessProbe", `{` + tcp8080 + `, "perodSeconds": 3}`,
			[]string{`livenessProbe.perodSeconds: Forbidden: unknown field (did you mean "periodSeconds"?)`}},
		{"wrong case", "livenessProbe", `{"TCPSocket": {"port": 80}}`,
			[]string{
				`livenessProbe.TCPSocket: Forbidden: unknown field (did you mean "tcpSocket"?)`,
				"livenessProbe: Required value: must specify a handler type",
			}},
		{"nested in a list", "readinessProbe", `{"httpGet": {"port": 80, "httpHeaders": [{"name": "A", "value": "1"}, {"name": "B", "valeu": "2"}]}}`,
			[]string{`readinessProbe.httpGet.httpHeaders[1].valeu: Forbidden: unknown field (did you mean "value"?)`}},
		{"nothing close", "readinessProbe", `{` + tcp8080 + `, "kubernetes": true}`,
			[]string{`readinessProbe.kubernetes: Forbidden: unknown field`}},
	})
	_, errs := probespec.Parse(web, `{"app": {"livenessprobe": {"tcpSocket": {"port": 80}}}}`)
	want := `pod default/web: container "app": livenessprobe: Forbidden: unknown field (did you mean "livenessProbe"?)`
	if errs.Len() != 1 || errs[0].Error() != want {
		t.Errorf("probe-type typo: %q, want %q", errs.Strings(), want)
	}
}

func TestParse_InvalidContainerLeftOutOthersKept(t *testing.T) {
	probes, errs := probespec.Parse(web, `{
		"a": {"livenessProbe": {"tcpSocket": {"port": 80}}},
		"b": {"livenessProbe": {"tcpSocket": {"port": 80}}, "readinessProbe": {"tcpSocket": {"port": 0}}},
		"c": {"readinessProbe": {"tcpSocket": {"port": 81}}}}`)
	if _, ok := probes["b"]; ok || len(probes) != 2 || probes["a"].Liveness == nil || probes["c"].Readiness == nil {
		t.Errorf("probes = %v, want a and c only", probes)
	}
	if got := errs.Containers(); len(got) != 1 || got[0] != "b" {
		t.Errorf("containers with errors = %v, want [b]", got)
	}
}

func TestParse_ContainerWithoutProbesIsKept(t *testing.T) {
	probes, errs := probespec.Parse(web, `{"app": {}, "side": null}`)
	if errs.Len() != 0 || len(probes) != 2 || !probes["app"].Empty() || !probes["side"].Empty() {
		t.Errorf("probes = %v, errors = %v", probes, errs)
	}
}

func TestParse_YAMLAndJSONGiveTheSameProbes(t *testing.T) {
	fromJSON, errs := probespec.Parse(web, `{"app": {"readinessProbe": {"httpGet": {"port": "http", "path": "/r"}, "periodSeconds": 2}}}`)
	if errs.Len() != 0 {
		t.Fatal(errs)
	}
	fromYAML, errs := probespec.Parse(web, "app:\n  readinessProbe:\n    httpGet: {port: http, path: /r}\n    periodSeconds: 2\n")
	if errs.Len() != 0 {
		t.Fatal(errs)
	}
	a, _ := json.Marshal(fromJSON)
	b, _ := json.Marshal(fromYAML)
	if !bytes.Equal(a, b) {
		t.Errorf("JSON gave %s\nYAML gave %s", a, b)
	}
}

package probespec_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/probespec"
)

// validationCase is one probe of container "app" and the exact errors
// Parse must report for it (nil: valid).
type validationCase struct {
	name, field, probe string
	want               []string
}

const prefix = `pod default/web: container "app": `

func runValidation(t *testing.T, tests []validationCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			probes, errs := parseApp(t, tc.field, tc.probe)
			got := errorStrings(errs)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = prefix + w
			}
			if len(want) == 0 {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Fatalf("errors:\n got %q\nwant %q", got, want)
			}
			if _, kept := probes["app"]; kept != (len(want) == 0) {
				t.Errorf("container kept = %v with %d errors", kept, len(want))
			}
		})
	}
}

func TestValidation_NumbersMustBeNonNegative(t *testing.T) {
	var tests []validationCase
	for _, f := range []string{"initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"} {
		tc := validationCase{name: f, field: "readinessProbe", probe: `{` + tcp8080 + `, "` + f + `": -1}`,
			want: []string{"readinessProbe." + f + ": Invalid value: -1: must be greater than or equal to 0"}}
		tests = append(tests, tc)
	}
	tests = append(tests, validationCase{name: "issue example", field: "livenessProbe",
		probe: `{` + tcp8080 + `, "periodSeconds": -1}`,
		want:  []string{"livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"}})
	runValidation(t, tests)
}

func TestValidation_LivenessSuccessThresholdMustBeOne(t *testing.T) {
	runValidation(t, []validationCase{
		{"one", "livenessProbe", `{` + tcp8080 + `, "successThreshold": 1}`, nil},
		{"defaulted", "livenessProbe", `{` + tcp8080 + `}`, nil},
		{"two", "livenessProbe", `{` + tcp8080 + `, "successThreshold": 2}`,
			[]string{"livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"negative reports both rules", "livenessProbe", `{` + tcp8080 + `, "successThreshold": -1}`,
			[]string{
				"livenessProbe.successThreshold: Invalid value: -1: must be greater than or equal to 0",
				"livenessProbe.successThreshold: Invalid value: -1: must be 1",
			}},
	})
}

func TestValidation_StartupSuccessThresholdMustBeOne(t *testing.T) {
	runValidation(t, []validationCase{
		{"one", "startupProbe", `{` + tcp8080 + `, "successThreshold": 1}`, nil},
		{"three", "startupProbe", `{` + tcp8080 + `, "successThreshold": 3}`,
			[]string{"startupProbe.successThreshold: Invalid value: 3: must be 1"}},
	})
}

func TestValidation_ReadinessSuccessThresholdMayExceedOne(t *testing.T) {
	runValidation(t, []validationCase{
		{"five", "readinessProbe", `{` + tcp8080 + `, "successThreshold": 5}`, nil},
	})
}

func TestValidation_ExactlyOneHandler(t *testing.T) {
	runValidation(t, []validationCase{
		{"none", "livenessProbe", `{"periodSeconds": 5}`,
			[]string{"livenessProbe: Required value: must specify a handler type"}},
		{"empty object", "livenessProbe", `{}`,
			[]string{"livenessProbe: Required value: must specify a handler type"}},
		{"exec and httpGet", "livenessProbe", `{"exec": {"command": ["true"]}, "httpGet": {"port": 80}}`,
			[]string{"livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"}},
		{"all four, first one wins", "readinessProbe",
			`{"exec": {"command": ["true"]}, "httpGet": {"port": 80}, ` + tcp8080 + `, "grpc": {"port": 1}}`,
			[]string{
				"readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
				"readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
				"readinessProbe.grpc: Forbidden: may not specify more than 1 handler type",
			}},
		{"tcp and grpc", "startupProbe", `{` + tcp8080 + `, "grpc": {"port": 1}}`,
			[]string{"startupProbe.grpc: Forbidden: may not specify more than 1 handler type"}},
	})
}

func TestValidation_ExecCommandRequired(t *testing.T) {
	runValidation(t, []validationCase{
		{"missing", "livenessProbe", `{"exec": {}}`, []string{"livenessProbe.exec.command: Required value"}},
		{"empty", "livenessProbe", `{"exec": {"command": []}}`, []string{"livenessProbe.exec.command: Required value"}},
		{"present", "livenessProbe", `{"exec": {"command": ["cat", "/tmp/ok"]}}`, nil},
	})
}

func TestValidation_PortNumberOrIANAName(t *testing.T) {
	runValidation(t, []validationCase{
		{"tcp 1", "livenessProbe", `{"tcpSocket": {"port": 1}}`, nil},
		{"tcp 65535", "livenessProbe", `{"tcpSocket": {"port": 65535}}`, nil},
		{"tcp name", "livenessProbe", `{"tcpSocket": {"port": "http-alt"}}`, nil},
		{"tcp 0", "livenessProbe", `{"tcpSocket": {"port": 0}}`,
			[]string{"livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
		{"tcp absent", "livenessProbe", `{"tcpSocket": {}}`,
			[]string{"livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
		{"http 65536", "readinessProbe", `{"httpGet": {"port": 65536}}`,
			[]string{"readinessProbe.httpGet.port: Invalid value: 65536: must be between 1 and 65535, inclusive"}},
		{"http numeric string", "readinessProbe", `{"httpGet": {"port": "8080"}}`,
			[]string{`readinessProbe.httpGet.port: Invalid value: "8080": must contain at least one letter (a-z)`}},
		{"name too long", "readinessProbe", `{"httpGet": {"port": "a-very-long-port-name"}}`,
			[]string{`readinessProbe.httpGet.port: Invalid value: "a-very-long-port-name": must be no more than 15 characters`}},
		{"name with double hyphen and trailing hyphen", "readinessProbe", `{"tcpSocket": {"port": "a--b-"}}`,
			[]string{
				`readinessProbe.tcpSocket.port: Invalid value: "a--b-": must not contain consecutive hyphens`,
				`readinessProbe.tcpSocket.port: Invalid value: "a--b-": must not begin or end with a hyphen`,
			}},
		{"name upper case", "readinessProbe", `{"tcpSocket": {"port": "HTTP"}}`,
			[]string{
				`readinessProbe.tcpSocket.port: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
				`readinessProbe.tcpSocket.port: Invalid value: "HTTP": must contain at least one letter (a-z)`,
			}},
		{"grpc 0", "livenessProbe", `{"grpc": {"port": 0}}`,
			[]string{"livenessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
	})
}

func TestValidation_GRPCPortMustBeANumber(t *testing.T) {
	runValidation(t, []validationCase{
		{"name", "livenessProbe", `{"grpc": {"port": "grpc"}}`,
			[]string{"livenessProbe.grpc.port: Invalid value: must be a port number: gRPC probes do not resolve named ports"}},
		{"number", "livenessProbe", `{"grpc": {"port": 9090, "service": "x"}}`, nil},
	})
}

func TestValidation_HTTPSchemeIsHTTPOrHTTPS(t *testing.T) {
	runValidation(t, []validationCase{
		{"HTTPS", "livenessProbe", `{"httpGet": {"port": 443, "scheme": "HTTPS"}}`, nil},
		{"lower case", "livenessProbe", `{"httpGet": {"port": 80, "scheme": "http"}}`,
			[]string{`livenessProbe.httpGet.scheme: Unsupported value: "http": supported values: "HTTP", "HTTPS"`}},
		{"ftp", "livenessProbe", `{"httpGet": {"port": 80, "scheme": "FTP"}}`,
			[]string{`livenessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`}},
	})
}

func TestValidation_HTTPHeaderNamesValid(t *testing.T) {
	bad := `a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`
	runValidation(t, []validationCase{
		{"valid", "readinessProbe", `{"httpGet": {"port": 80, "httpHeaders": [{"name": "X-Probe-1", "value": "a b"}, {"name": "Host", "value": ""}]}}`, nil},
		{"space", "readinessProbe", `{"httpGet": {"port": 80, "httpHeaders": [{"name": "X Probe", "value": "1"}]}}`,
			[]string{`readinessProbe.httpGet.httpHeaders: Invalid value: "X Probe": ` + bad}},
		{"empty", "readinessProbe", `{"httpGet": {"port": 80, "httpHeaders": [{"name": "", "value": "1"}]}}`,
			[]string{`readinessProbe.httpGet.httpHeaders: Invalid value: "": ` + bad}},
		{"colon", "readinessProbe", `{"httpGet": {"port": 80, "httpHeaders": [{"name": "X:Y", "value": "1"}]}}`,
			[]string{`readinessProbe.httpGet.httpHeaders: Invalid value: "X:Y": ` + bad}},
	})
}

func TestValidation_ProbeTerminationGracePeriodMustBePositive(t *testing.T) {
	runValidation(t, []validationCase{
		{"positive", "livenessProbe", `{` + tcp8080 + `, "terminationGracePeriodSeconds": 1}`, nil},
		{"startup positive", "startupProbe", `{` + tcp8080 + `, "terminationGracePeriodSeconds": 60}`, nil},
		{"zero", "livenessProbe", `{` + tcp8080 + `, "terminationGracePeriodSeconds": 0}`,
			[]string{"livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"}},
		{"negative", "startupProbe", `{` + tcp8080 + `, "terminationGracePeriodSeconds": -5}`,
			[]string{"startupProbe.terminationGracePeriodSeconds: Invalid value: -5: must be greater than 0"}},
	})
}

func TestValidation_ReadinessTerminationGracePeriodForbidden(t *testing.T) {
	runValidation(t, []validationCase{
		{"set", "readinessProbe", `{` + tcp8080 + `, "terminationGracePeriodSeconds": 10}`,
			[]string{"readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes"}},
		{"zero reports both rules", "readinessProbe", `{` + tcp8080 + `, "terminationGracePeriodSeconds": 0}`,
			[]string{
				"readinessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
				"readinessProbe.terminationGracePeriodSeconds: Invalid value: 0: must not be set for readinessProbes",
			}},
	})
}

func TestValidation_ValidateMatchesParse(t *testing.T) {
	// Validate is usable on its own (e.g. for probes from another source).
	cp := probespec.ContainerProbes{Liveness: &corev1.Probe{SuccessThreshold: 2, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1,
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}
	errs := probespec.Validate(cp)
	if len(errs) != 1 || errs[0].Error() != "livenessProbe.successThreshold: Invalid value: 2: must be 1" {
		t.Errorf("Validate = %v", errs)
	}
	if errs := probespec.ValidateProbe(probespec.Readiness, nil); len(errs) != 0 {
		t.Errorf("nil probe: %v", errs)
	}
}

func TestValidation_ErrorsNamePodContainerProbeAndField(t *testing.T) {
	_, errs := probespec.Parse(probespec.PodRef{Namespace: "shop", Name: "cart-0"},
		`{"cart": {"startupProbe": {"httpGet": {"port": 0}}}}`)
	want := `pod shop/cart-0: container "cart": startupProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive`
	if errs.Len() != 1 || errs[0].Error() != want {
		t.Fatalf("errors = %q, want %q", errs.Strings(), want)
	}
	for _, part := range []string{"shop/cart-0", `"cart"`, "startupProbe", "httpGet.port"} {
		if !strings.Contains(errs.Error(), part) {
			t.Errorf("error %q does not name %s", errs.Error(), part)
		}
	}
}

// The API server's validateInitContainers ("Disallowed field with other
// errors should only return a single Forbidden"): a probe on a plain init
// container is exactly one Forbidden error per probe, at
// spec.initContainers[i].<probe>, whatever is wrong inside it; problems
// outside the probes stay, and a sidecar's probes are validated as usual.
func TestValidation_PlainInitContainerProbeIsASingleForbidden(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	podSpec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup"}, {Name: "migrate"}, {Name: "proxy", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "web"}},
	}
	const forbidden = ": Forbidden: may not be set for init containers without restartPolicy=Always"
	bad := `{"tcpSocket": {"port": 80}, "initialDelaySeconds": -1, "timeoutSeconds": -1, "periodSeconds": -1,
		"successThreshold": -1, "failureThreshold": -1, "terminationGracePeriodSeconds": -1}`
	tests := []struct {
		name, annotation string
		want             []string
	}{
		{"valid probe", `{"migrate": {"startupProbe": {"tcpSocket": {"port": 80}}}}`,
			[]string{`pod default/web: container "migrate": spec.initContainers[1].startupProbe` + forbidden}},
		{"probe with other errors", `{"migrate": {"startupProbe": ` + bad + `}}`,
			[]string{`pod default/web: container "migrate": spec.initContainers[1].startupProbe` + forbidden}},
		{"every probe, one invalid", `{"setup": {"livenessProbe": ` + bad + `, "readinessProbe": {"exec": {}}, "startupProbe": {"tcpSocket": {"port": 80}}}}`,
			[]string{
				`pod default/web: container "setup": spec.initContainers[0].livenessProbe` + forbidden,
				`pod default/web: container "setup": spec.initContainers[0].readinessProbe` + forbidden,
				`pod default/web: container "setup": spec.initContainers[0].startupProbe` + forbidden,
			}},
		{"an unknown key outside the probes stays", `{"migrate": {"startupProbe": ` + bad + `, "livenesProbe": {}}}`,
			[]string{
				`pod default/web: container "migrate": livenesProbe: Forbidden: unknown field (did you mean "livenessProbe"?)`,
				`pod default/web: container "migrate": spec.initContainers[1].startupProbe` + forbidden,
			}},
		{"a sidecar's probe is validated", `{"proxy": {"startupProbe": {"tcpSocket": {"port": 80}, "successThreshold": 2}}}`,
			[]string{`pod default/web: container "proxy": startupProbe.successThreshold: Invalid value: 2: must be 1`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errorStrings(probespec.Check(web, tc.annotation, podSpec).Errors)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Check errors =\n %q\nwant\n %q", got, tc.want)
			}
		})
	}
}

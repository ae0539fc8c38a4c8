package probespec_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/probespec"
)

const tcp8080 = `"tcpSocket": {"port": 8080}`

// numbers picks the four defaulted numbers out of a probe.
func numbers(p *corev1.Probe) [4]int32 {
	return [4]int32{p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold}
}

func TestDefaults_ZeroOrAbsentBecomesKubernetesDefault(t *testing.T) {
	tests := []struct {
		name, probe string
		want        [4]int32 // timeout, period, success, failure
	}{
		{"absent", `{` + tcp8080 + `}`, [4]int32{1, 10, 1, 3}},
		{"explicit zero", `{` + tcp8080 + `, "timeoutSeconds": 0, "periodSeconds": 0, "successThreshold": 0, "failureThreshold": 0}`, [4]int32{1, 10, 1, 3}},
		{"user values kept", `{` + tcp8080 + `, "timeoutSeconds": 5, "periodSeconds": 2, "successThreshold": 4, "failureThreshold": 30}`, [4]int32{5, 2, 4, 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := numbers(mustParseProbe(t, "readinessProbe", tc.probe))
			if got != tc.want {
				t.Errorf("timeout/period/success/failure = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDefaults_PeriodZeroBecomesTen(t *testing.T) {
	p := mustParseProbe(t, "livenessProbe", `{`+tcp8080+`, "periodSeconds": 0}`)
	if p.PeriodSeconds != 10 {
		t.Errorf("periodSeconds = %d, want 10", p.PeriodSeconds)
	}
}

func TestDefaults_TimeoutZeroBecomesOne(t *testing.T) {
	p := mustParseProbe(t, "livenessProbe", `{`+tcp8080+`, "timeoutSeconds": 0}`)
	if p.TimeoutSeconds != 1 {
		t.Errorf("timeoutSeconds = %d, want 1", p.TimeoutSeconds)
	}
}

func TestDefaults_ThresholdsZeroBecomeOneAndThree(t *testing.T) {
	p := mustParseProbe(t, "startupProbe", `{`+tcp8080+`, "successThreshold": 0, "failureThreshold": 0}`)
	if p.SuccessThreshold != 1 || p.FailureThreshold != 3 {
		t.Errorf("success/failure = %d/%d, want 1/3", p.SuccessThreshold, p.FailureThreshold)
	}
}

func TestDefaults_InitialDelayAndGraceAreNotDefaulted(t *testing.T) {
	p := mustParseProbe(t, "livenessProbe", `{`+tcp8080+`}`)
	if p.InitialDelaySeconds != 0 || p.TerminationGracePeriodSeconds != nil {
		t.Errorf("initialDelaySeconds=%d terminationGracePeriodSeconds=%v, want 0 and nil",
			p.InitialDelaySeconds, p.TerminationGracePeriodSeconds)
	}
}

func TestDefaults_HTTPGetPathAndScheme(t *testing.T) {
	tests := []struct {
		name, httpGet string
		path          string
		scheme        corev1.URIScheme
	}{
		{"absent", `{"port": 80}`, "/", corev1.URISchemeHTTP},
		{"empty", `{"port": 80, "path": "", "scheme": ""}`, "/", corev1.URISchemeHTTP},
		{"kept", `{"port": 80, "path": "/ready", "scheme": "HTTPS"}`, "/ready", corev1.URISchemeHTTPS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParseProbe(t, "readinessProbe", `{"httpGet": `+tc.httpGet+`}`)
			if p.HTTPGet.Path != tc.path || p.HTTPGet.Scheme != tc.scheme {
				t.Errorf("path, scheme = %q, %q; want %q, %q", p.HTTPGet.Path, p.HTTPGet.Scheme, tc.path, tc.scheme)
			}
		})
	}
}

func TestDefaults_GRPCServiceBecomesEmptyString(t *testing.T) {
	p := mustParseProbe(t, "readinessProbe", `{"grpc": {"port": 9090}}`)
	if p.GRPC.Service == nil || *p.GRPC.Service != "" {
		t.Fatalf("grpc.service = %v, want pointer to \"\"", p.GRPC.Service)
	}
	p = mustParseProbe(t, "readinessProbe", `{"grpc": {"port": 9090, "service": "db"}}`)
	if *p.GRPC.Service != "db" {
		t.Errorf("grpc.service = %q, want db", *p.GRPC.Service)
	}
}

func TestDefaults_KeepsTheRestOfTheSpec(t *testing.T) {
	p := mustParseProbe(t, "livenessProbe", `{"httpGet": {"host": "10.0.0.1", "port": "http",
		"httpHeaders": [{"name": "X-A", "value": "1"}]}, "initialDelaySeconds": 7, "terminationGracePeriodSeconds": 5}`)
	if p.HTTPGet.Host != "10.0.0.1" || p.HTTPGet.Port != intstr.FromString("http") ||
		len(p.HTTPGet.HTTPHeaders) != 1 || p.InitialDelaySeconds != 7 || *p.TerminationGracePeriodSeconds != 5 {
		t.Errorf("user fields changed: %+v", p)
	}
}

func TestDefaults_NegativeValuesAreKeptForValidation(t *testing.T) {
	p := &corev1.Probe{PeriodSeconds: -1, TimeoutSeconds: -2}
	probespec.DefaultProbe(p)
	if p.PeriodSeconds != -1 || p.TimeoutSeconds != -2 {
		t.Errorf("negative values changed: period %d timeout %d", p.PeriodSeconds, p.TimeoutSeconds)
	}
}

func TestDefaults_AreIdempotent(t *testing.T) {
	p := mustParseProbe(t, "readinessProbe", `{"httpGet": {"port": 80}, "periodSeconds": 3}`)
	before := p.DeepCopy()
	probespec.DefaultProbe(p)
	if !equality.Semantic.DeepEqual(before, p) {
		t.Errorf("second defaulting changed the probe: %+v -> %+v", before, p)
	}
}

package probespec_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/probespec"
)

var web = probespec.PodRef{Namespace: "default", Name: "web"}

// parseApp parses an annotation declaring one container "app" whose
// livenessProbe, readinessProbe or startupProbe is probeJSON.
func parseApp(t *testing.T, field, probeJSON string) (probespec.PodProbes, probespec.ErrorList) {
	t.Helper()
	return probespec.Parse(web, `{"app": {"`+field+`": `+probeJSON+`}}`)
}

// mustParseProbe parses one probe that must be valid and returns it.
func mustParseProbe(t *testing.T, field, probeJSON string) *corev1.Probe {
	t.Helper()
	probes, errs := parseApp(t, field, probeJSON)
	if errs.Len() != 0 {
		t.Fatalf("unexpected errors:\n%v", errs)
	}
	cp, ok := probes["app"]
	if !ok {
		t.Fatalf("container app missing from %v", probes)
	}
	switch field {
	case "livenessProbe":
		return cp.Liveness
	case "readinessProbe":
		return cp.Readiness
	}
	return cp.Startup
}

// errorStrings renders a list for comparison.
func errorStrings(l probespec.ErrorList) []string {
	if l.Len() == 0 {
		return nil
	}
	return l.Strings()
}

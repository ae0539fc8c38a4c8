package lifecycle_test

import (
	"strings"
	"testing"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/spec"
)

func TestDefaultParserReportsPerContainer(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		wantProbes []string          // containers with probes
		wantErrs   map[string]string // container → substring of its error
	}{{
		name:       "valid",
		annotation: `{"web": {"readinessProbe": {"tcpSocket": {"port": 8080}}}}`,
		wantProbes: []string{"web"},
	}, {
		name:       "one bad container keeps the other",
		annotation: `{"web": {"readinessProbe": {"tcpSocket": {"port": 8080}}}, "side": {"livenessProbe": {"tcpSocket": {"port": 1}, "successThreshold": 2}}}`,
		wantProbes: []string{"web"},
		wantErrs:   map[string]string{"side": "successThreshold"},
	}, {
		name:       "unreadable annotation reaches every container",
		annotation: `{not json`,
		wantErrs:   map[string]string{"web": "", "side": "", spec.PodWide: ""},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, lifecycle.WithProbeParser(lifecycle.ParseProbes))
			sb := sandbox("sb1", "uid1")
			sb.Annotations = map[string]string{spec.AnnotationProbes: tt.annotation}
			e.cache.UpdateContainer(t0, sb, ctr("c1", "sb1", "web", prober.ContainerRunning, t0))
			e.cache.UpdateContainer(t0, sb, ctr("c2", "sb1", "side", prober.ContainerRunning, t0))
			p := e.sink.last(t).pod
			for _, name := range tt.wantProbes {
				if _, ok := p.Probes[name]; !ok {
					t.Errorf("no probes for %s: %+v", name, p.Probes)
				}
			}
			if len(p.SpecErrors) != len(tt.wantErrs) {
				t.Fatalf("spec errors = %v, want keys of %v", p.SpecErrors, tt.wantErrs)
			}
			for name, sub := range tt.wantErrs {
				if msg, ok := p.SpecErrors[name]; !ok || !strings.Contains(msg, sub) || msg == "" {
					t.Errorf("error for %s = %q, want one containing %q", name, msg, sub)
				}
			}
		})
	}
}

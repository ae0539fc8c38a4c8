package probespec_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/probespec"
)

const kubeletPorts = `[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"dns","containerPort":53,"protocol":"UDP"},{"containerPort":9000,"protocol":"TCP"}]`

func TestResolvePort(t *testing.T) {
	tests := []struct {
		name    string
		port    intstr.IntOrString
		ports   string
		want    int
		wantErr string
	}{
		{"number used as is", intstr.FromInt32(9090), "", 9090, ""},
		{"number ignores a malformed annotation", intstr.FromInt32(80), "{not json", 80, ""},
		{"named port", intstr.FromString("http"), kubeletPorts, 8080, ""},
		{"name matches whatever the protocol", intstr.FromString("dns"), kubeletPorts, 53, ""},
		{"numeric string is the kubelet's last resort", intstr.FromString("8081"), kubeletPorts, 8081, ""},
		{"name not found", intstr.FromString("metrics"), kubeletPorts, 0,
			`port "metrics" not found in the container's ports (http=8080, dns=53, <unnamed>=9000)`},
		{"no ports declared", intstr.FromString("http"), "", 0,
			`port "http" not found: the container declares no ports`},
		{"annotation malformed", intstr.FromString("http"), `[{"name":"http","containerPort":"x"}]`, 0,
			"annotation io.kubernetes.container.ports is malformed"},
		{"number zero", intstr.FromInt32(0), "", 0, "invalid port number 0: must be between 1 and 65535"},
		{"number too big", intstr.FromInt32(70000), "", 0, "invalid port number 70000"},
		{"named port out of range", intstr.FromString("big"), `[{"name":"big","containerPort":70000}]`, 0, "invalid port number 70000"},
		{"numeric string out of range", intstr.FromString("0"), "", 0, "invalid port number 0"},
		{"no type", intstr.IntOrString{Type: 7}, "", 0, "has no type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probespec.ResolvePort(tc.port, tc.ports)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolvePort = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestPortsAnnotation_RoundTripsThroughResolvePort(t *testing.T) {
	ports := []corev1.ContainerPort{{Name: "web", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}}
	ann := probespec.PortsAnnotation(ports)
	if ann != `[{"name":"web","containerPort":8443,"protocol":"TCP"}]` {
		t.Errorf("annotation = %s", ann)
	}
	if n, err := probespec.ResolvePort(intstr.FromString("web"), ann); err != nil || n != 8443 {
		t.Errorf("ResolvePort = %d, %v", n, err)
	}
	if probespec.PortsAnnotation(nil) != "" {
		t.Error("no ports should give an empty annotation, as the kubelet writes none")
	}
}

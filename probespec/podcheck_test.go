package probespec_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/probespec"
)

func TestCheckPod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	podSpec := &corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "migrate"},
			{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 15000}}},
		},
		Containers: []corev1.Container{
			{Name: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
			{Name: "worker"},
		},
	}
	tests := []struct {
		name, annotation string
		want             []string
	}{
		{"named port resolves", `{"web": {"readinessProbe": {"httpGet": {"port": "http"}}}}`, nil},
		{"numeric ports need no declaration", `{"worker": {"livenessProbe": {"tcpSocket": {"port": 9000}}}}`, nil},
		{"restartable init container", `{"proxy": {"readinessProbe": {"httpGet": {"port": "admin"}}}}`, nil},
		{"container not in the pod", `{"ghost": {"livenessProbe": {"tcpSocket": {"port": 1}}}}`,
			[]string{`pod default/web: container "ghost": spec.containers: Not found: "ghost"`}},
		{"plain init container", `{"migrate": {"livenessProbe": {"tcpSocket": {"port": 1}}}}`,
			[]string{`pod default/web: container "migrate": spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`}},
		{"named port not declared", `{"web": {"livenessProbe": {"tcpSocket": {"port": "metrics"}}, "startupProbe": {"httpGet": {"port": "http"}}}}`,
			[]string{`pod default/web: container "web": livenessProbe.tcpSocket.port: Invalid value: "metrics": port "metrics" not found in the container's ports (http=8080)`}},
		{"named port on a container without ports", `{"worker": {"readinessProbe": {"httpGet": {"port": "http"}}}}`,
			[]string{`pod default/web: container "worker": readinessProbe.httpGet.port: Invalid value: "http": port "http" not found: the container declares no ports`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			probes, errs := probespec.Parse(web, tc.annotation)
			if errs.Len() != 0 {
				t.Fatalf("fixture does not parse: %v", errs)
			}
			got := errorStrings(probespec.CheckPod(web, probes, podSpec))
			if !slices.Equal(got, tc.want) {
				t.Errorf("CheckPod =\n %q\nwant\n %q", got, tc.want)
			}
		})
	}
}

package probespec_test

import (
	"testing"

	"github.com/probelet/probelet/probespec"
)

func TestDescribe(t *testing.T) {
	tests := []struct{ name, field, probe, want string }{
		{"http with named port", "readinessProbe", `{"httpGet": {"path": "/ready", "port": "http"}}`,
			"http-get http://:http/ready delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"https with host and headers", "readinessProbe",
			`{"httpGet": {"scheme": "HTTPS", "host": "10.0.0.1", "port": 8443, "httpHeaders": [{"name": "X-A", "value": "1"}, {"name": "Host", "value": "web"}]}}`,
			"http-get https://10.0.0.1:8443/ headers=[X-A=1 Host=web] delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"tcp", "livenessProbe", `{"tcpSocket": {"port": 8080}, "periodSeconds": 2, "initialDelaySeconds": 4}`,
			"tcp-socket :8080 delay=4s timeout=1s period=2s #success=1 #failure=3"},
		{"exec with grace", "startupProbe", `{"exec": {"command": ["cat", "/tmp/started"]}, "failureThreshold": 30, "terminationGracePeriodSeconds": 5}`,
			"exec [cat /tmp/started] delay=0s timeout=1s period=10s #success=1 #failure=30 terminationGracePeriod=5s"},
		{"grpc", "livenessProbe", `{"grpc": {"port": 9090}}`,
			"grpc <pod>:9090 delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"grpc service", "livenessProbe", `{"grpc": {"port": 9090, "service": "db"}}`,
			"grpc <pod>:9090 service=db delay=0s timeout=1s period=10s #success=1 #failure=3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := probespec.Describe(mustParseProbe(t, tc.field, tc.probe)); got != tc.want {
				t.Errorf("Describe =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
	if got := probespec.Describe(nil); got != "<none>" {
		t.Errorf("Describe(nil) = %q", got)
	}
}

package httpprobe

import (
	"net/http"
	"os"
	"os/exec"
	"testing"
)

// TestTransportIgnoresEnvProxy runs in a child process because net/http
// reads the proxy environment only once per process.
func TestTransportIgnoresEnvProxy(t *testing.T) {
	if os.Getenv("PROBELET_PROXY_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTransportIgnoresEnvProxy$")
		cmd.Env = append(os.Environ(), "PROBELET_PROXY_CHILD=1",
			"HTTP_PROXY=http://192.0.2.1:3128", "HTTPS_PROXY=http://192.0.2.1:3128", "NO_PROXY=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	for _, target := range []string{"http://10.0.0.7:8080/healthz", "https://10.0.0.7:8443/"} {
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if u, _ := http.ProxyFromEnvironment(req); u == nil {
			t.Fatalf("the environment proxy is not in effect for %s; the test proves nothing", target)
		}
		if u, err := New().transport.Proxy(req); u != nil || err != nil {
			t.Errorf("probe transport proxies %s via %v (%v), want direct", target, u, err)
		}
	}
}

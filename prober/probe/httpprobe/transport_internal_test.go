package httpprobe

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/quietio/httpwire"
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

// A probe from a pod's network namespace gets a transport of its own,
// plain HTTP on the quiet I/O too (for a redirect to HTTPS): the shared
// transport pools HTTP/2 connections by host and port, which name
// different servers in different namespaces. TestHTTPSProbesNeverShareAConnectionAcrossNamespaces
// (prober/probe) runs such probes from two namespaces at once; the race it
// guards against is too narrow to lose on demand, so this pins the rule.
func TestProbesFromAPodsNamespaceUseATransportOfTheirOwn(t *testing.T) {
	p := New()
	fromPod := podnet.WithNamespace(context.Background(), &podnet.Namespace{})
	for _, scheme := range []corev1.URIScheme{"HTTP", "HTTPS"} {
		tg := Target{Scheme: scheme, Host: "127.0.0.1", Port: 80, Timeout: time.Second}
		c, _, _, done := p.client(context.Background(), tg)
		done()
		if c.Transport != http.RoundTripper(p.transport) && c.Transport != http.RoundTripper(p.direct) {
			t.Errorf("%s from the node: transport %T, want the shared one", scheme, c.Transport)
		}
		c, _, _, done = p.client(fromPod, tg)
		done()
		next := c.Transport
		if d, ok := next.(*httpwire.Transport); ok {
			next = d.Next
		}
		if _, ok := next.(*ownTransport); !ok {
			t.Errorf("%s from a pod: transport %T, want one of its own", scheme, next)
		}
	}
}

package httpprobe_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
)

func TestProbeHTTPS(t *testing.T) {
	ch := make(chan seen, 4)
	h1 := httptest.NewTLSServer(recordInto(ch, status(http.StatusOK, "tls ok")))
	t.Cleanup(h1.Close)
	h2 := httptest.NewUnstartedServer(recordInto(ch, status(http.StatusOK, "h2 ok")))
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	plain := serve(t, status(http.StatusOK, "plain"))

	tests := []struct {
		name       string
		srv        *httptest.Server
		scheme     string
		opts       []httpprobe.Option
		wantResult probe.Result
		wantOutput string
		wantProto  string // "" when the server handler is not reached
	}{
		{"self-signed accepted", h1, "HTTPS", nil, probe.Success, "tls ok", "HTTP/1.1"},
		{"lower-case scheme", h1, "https", nil, probe.Success, "tls ok", "HTTP/1.1"},
		// The kubelet's transport negotiates HTTP/2 when the server offers it.
		{"http2 negotiated", h2, "HTTPS", nil, probe.Success, "h2 ok", "HTTP/2.0"},
		{"verifying config rejects self-signed", h1, "HTTPS",
			[]httpprobe.Option{httpprobe.WithTLSConfig(&tls.Config{RootCAs: x509.NewCertPool()})},
			probe.Failure, "certificate signed by unknown authority", ""},
		{"http to an https server", h1, "HTTP", nil, probe.Failure, "HTTP probe failed with statuscode: 400", ""},
		{"https to an http server", plain, "HTTPS", nil, probe.Failure, "server gave HTTP response to HTTPS client", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := targetOf(t, tc.srv, "/")
			target.Scheme = corev1.URIScheme(tc.scheme)
			res, out, err := httpprobe.New(tc.opts...).Probe(context.Background(), target)
			if err != nil || res != tc.wantResult || !strings.Contains(out, tc.wantOutput) {
				t.Fatalf("Probe = (%s, %q, %v), want (%s, output containing %q, nil)", res, out, err, tc.wantResult, tc.wantOutput)
			}
			if tc.wantProto == "" {
				return
			}
			if got := <-ch; got.proto != tc.wantProto {
				t.Errorf("server saw %s, want %s", got.proto, tc.wantProto)
			}
		})
	}
}

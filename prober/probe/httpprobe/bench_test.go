package httpprobe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
)

// BenchmarkProbe is one HTTP probe against a loopback server: a fresh
// connection, GET, 200, close — exchanged on the probing goroutine
// (probelet's default) and through net/http's Transport (the kubelet's).
// Back to back, the process never idles: what a hand-off costs an idle
// agent shows in hack/bench/engine instead.
func BenchmarkProbe(b *testing.B) {
	srv := httptest.NewServer(status(http.StatusOK, "ok"))
	b.Cleanup(srv.Close)
	target := targetOf(b, srv, "/healthz")
	for _, tc := range []struct {
		name string
		p    *httpprobe.Prober
	}{
		{"exchange=direct", httpprobe.New()},
		{"exchange=net-http-transport", httpprobe.New(httpprobe.WithNetHTTPTransport())},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, out, err := tc.p.Probe(context.Background(), target); res != probe.Success {
					b.Fatalf("Probe = (%s, %q, %v)", res, out, err)
				}
			}
		})
	}
}

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
// connection, GET, 200, close.
func BenchmarkProbe(b *testing.B) {
	srv := httptest.NewServer(status(http.StatusOK, "ok"))
	b.Cleanup(srv.Close)
	target := targetOf(b, srv, "/healthz")
	p := httpprobe.New()
	b.ReportAllocs()
	for b.Loop() {
		if res, out, err := p.Probe(context.Background(), target); res != probe.Success {
			b.Fatalf("Probe = (%s, %q, %v)", res, out, err)
		}
	}
}

package httpprobe_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
)

func TestProbeRequestAsSeenByServer(t *testing.T) {
	absent := []string(nil)
	tests := []struct {
		name    string
		headers []corev1.HTTPHeader
		want    map[string][]string // header name -> values; nil means absent
	}{
		{"kubelet defaults", nil, map[string][]string{
			"User-Agent": {"kube-probe/1.37"}, "Accept": {"*/*"}, "Accept-Encoding": absent,
		}},
		{"custom user agent", []corev1.HTTPHeader{{Name: "User-Agent", Value: "foo/1.0"}},
			map[string][]string{"User-Agent": {"foo/1.0"}}},
		{"empty user agent removes it", []corev1.HTTPHeader{{Name: "User-Agent", Value: ""}},
			map[string][]string{"User-Agent": absent, "Accept": {"*/*"}}},
		{"custom accept", []corev1.HTTPHeader{{Name: "Accept", Value: "application/json"}},
			map[string][]string{"Accept": {"application/json"}}},
		{"empty accept removes it", []corev1.HTTPHeader{{Name: "Accept", Value: ""}},
			map[string][]string{"Accept": absent, "User-Agent": {"kube-probe/1.37"}}},
		{"lower-case names are canonical", []corev1.HTTPHeader{{Name: "user-agent", Value: "low/1"}, {Name: "x-muffins", Value: "yes"}},
			map[string][]string{"User-Agent": {"low/1"}, "X-Muffins": {"yes"}}},
		{"repeated header keeps every value", []corev1.HTTPHeader{{Name: "X-Multi", Value: "a"}, {Name: "X-Multi", Value: "b"}},
			map[string][]string{"X-Multi": {"a", "b"}}},
	}
	p := httpprobe.New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, ch := recorder(t)
			target := targetOf(t, srv, "/")
			target.Headers = tc.headers
			if res, out, err := p.Probe(context.Background(), target); res != probe.Success || err != nil {
				t.Fatalf("Probe = (%s, %q, %v), want success", res, out, err)
			}
			got := <-ch
			if got.method != http.MethodGet || !got.close {
				t.Errorf("server saw method %s, Connection: close %v; want GET and true", got.method, got.close)
			}
			for name, want := range tc.want {
				if v, ok := got.header[name]; !slices.Equal(v, want) || ok != (want != nil) {
					t.Errorf("header %s = %q (present %v), want %q", name, v, ok, want)
				}
			}
		})
	}
}

func TestProbeHostHeaderSetsHost(t *testing.T) {
	srv, ch := recorder(t)
	target := targetOf(t, srv, "/")
	target.Headers = []corev1.HTTPHeader{{Name: "Host", Value: "muffins.cupcakes.org"}}
	if res, _, err := httpprobe.New().Probe(context.Background(), target); res != probe.Success || err != nil {
		t.Fatalf("Probe = (%s, %v), want success", res, err)
	}
	if got := <-ch; got.host != "muffins.cupcakes.org" {
		t.Fatalf("server saw Host %q, want muffins.cupcakes.org", got.host)
	}
}

func TestProbePathAsSeenByServer(t *testing.T) {
	tests := []struct{ path, wantURI string }{
		{"", "/"},
		{"/", "/"},
		{"/ready", "/ready"},
		{"healthz", "/healthz"},
		{"/ready?verbose=1&x=y", "/ready?verbose=1&x=y"},
		{"/with space", "/with%20space"},
		{"/a#fragment", "/a"},
	}
	p := httpprobe.New()
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			srv, ch := recorder(t)
			if res, _, err := p.Probe(context.Background(), targetOf(t, srv, tc.path)); res != probe.Success || err != nil {
				t.Fatalf("Probe = (%s, %v), want success", res, err)
			}
			if got := <-ch; got.uri != tc.wantURI {
				t.Fatalf("server saw %q, want %q", got.uri, tc.wantURI)
			}
		})
	}
}

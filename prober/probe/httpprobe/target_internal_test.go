package httpprobe

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestFormatURL(t *testing.T) {
	tests := []struct {
		scheme, host string
		port         int
		path, want   string
	}{
		{"http", "localhost", 93, "", "http://localhost:93"},
		{"https", "localhost", 93, "/path", "https://localhost:93/path"},
		{"http", "localhost", 93, "?foo", "http://localhost:93?foo"},
		{"https", "localhost", 93, "/path?bar", "https://localhost:93/path?bar"},
		{"http", "10.0.0.7", 8080, "healthz", "http://10.0.0.7:8080/healthz"},
		{"http", "::1", 93, "/path", "http://[::1]:93/path"},
		{"http", "fd00::7", 80, "/", "http://[fd00::7]:80/"},
		{"http", "10.0.0.7", 80, "/%zz", "http://10.0.0.7:80/%25zz"}, // unparsable path kept as is
	}
	for _, tc := range tests {
		if got := formatURL(tc.scheme, tc.host, tc.port, tc.path).String(); got != tc.want {
			t.Errorf("formatURL(%q, %q, %d, %q) = %q, want %q", tc.scheme, tc.host, tc.port, tc.path, got, tc.want)
		}
	}
}

func TestHeader(t *testing.T) {
	tests := []struct {
		name string
		in   []corev1.HTTPHeader
		want http.Header
	}{
		{"defaults", nil, http.Header{"User-Agent": {"ua"}, "Accept": {"*/*"}}},
		{"empty user agent kept empty", []corev1.HTTPHeader{{Name: "User-Agent"}},
			http.Header{"User-Agent": {""}, "Accept": {"*/*"}}},
		{"empty accept dropped", []corev1.HTTPHeader{{Name: "accept"}},
			http.Header{"User-Agent": {"ua"}}},
		{"host kept in header", []corev1.HTTPHeader{{Name: "host", Value: "h"}},
			http.Header{"User-Agent": {"ua"}, "Accept": {"*/*"}, "Host": {"h"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := header(tc.in, "ua")
			if !maps.EqualFunc(got, tc.want, slices.Equal[[]string]) {
				t.Fatalf("header() = %v, want %v", got, tc.want)
			}
		})
	}
}

package apicount_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probelet/probelet/internal/apicount"
)

func TestOfNamesCallsAsTheAPIServerDoes(t *testing.T) {
	for _, c := range []struct {
		method, url          string
		wantVerb, wantResour string
	}{
		{"GET", "/api/v1/namespaces/a/pods/p", "get", "pods"},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn", "list", "pods"},
		{"GET", "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn", "watch", "pods"},
		{"GET", "/api/v1/watch/namespaces", "watch", "namespaces"},
		{"PATCH", "/api/v1/namespaces/a/pods/p/status", "patch", "pods/status"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/probelet-system/leases/n", "update", "leases"},
		{"POST", "/apis/coordination.k8s.io/v1/namespaces/probelet-system/leases", "create", "leases"},
		{"DELETE", "/api/v1/namespaces/a/pods/p", "delete", "pods"},
		{"GET", "/version", "GET", "/version"},
	} {
		req := httptest.NewRequest(c.method, c.url, nil)
		if verb, res := apicount.Of(req); verb != c.wantVerb || res != c.wantResour {
			t.Errorf("%s %s: %s %s, want %s %s", c.method, c.url, verb, res, c.wantVerb, c.wantResour)
		}
	}
}

func TestTransportCountsEveryCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			w.WriteHeader(http.StatusConflict) // a failed call counts too
		}
	}))
	defer srv.Close()
	vec, count := apicount.Counter("test_requests_total", "test")
	client := &http.Client{Transport: apicount.Wrapper(count)(http.DefaultTransport)}
	for _, c := range []struct{ method, path string }{
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/x/leases/n"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/x/leases/n"},
		{"PATCH", "/api/v1/namespaces/a/pods/p/status"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := testutil.ToFloat64(vec.WithLabelValues("update", "leases")); got != 2 {
		t.Errorf("update leases: %v, want 2", got)
	}
	if got := testutil.ToFloat64(vec.WithLabelValues("patch", "pods/status")); got != 1 {
		t.Errorf("patch pods/status: %v, want 1", got)
	}
}

// Package apicount counts a client's calls to the API server by verb and
// resource, named as the API server's own apiserver_request_total names
// them (get, list, watch, create, update, patch, delete; pods,
// pods/status, leases), so a component's load on the API server can be
// read off its own metrics and set beside another's.
package apicount

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// requestInfo parses a request's path the way the API server does.
var requestInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Count is told each call's verb and resource ("pods/status"; the path
// for a call that names no resource, such as /version).
type Count func(verb, resource string)

// Of returns the verb and resource of a request to the API server.
func Of(req *http.Request) (verb, resource string) {
	info, err := requestInfo.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		return req.Method, req.URL.Path
	}
	resource = info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	return info.Verb, resource
}

// Transport counts each request through rt before sending it: a call
// counts whether it succeeds or not, as the API server counts it.
func Transport(rt http.RoundTripper, count Count) http.RoundTripper {
	return roundTripper{rt: rt, count: count}
}

// Wrapper is Transport for rest.Config.Wrap.
func Wrapper(count Count) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper { return Transport(rt, count) }
}

type roundTripper struct {
	rt    http.RoundTripper
	count Count
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r.count(Of(req))
	return r.rt.RoundTrip(req)
}

// Counter returns a counter vector by verb and resource, and the Count
// that feeds it.
func Counter(name, help string) (*prometheus.CounterVec, Count) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"verb", "resource"})
	return vec, func(verb, resource string) { vec.WithLabelValues(verb, resource).Inc() }
}

package httpprobe

import (
	"errors"
	"net/http"
)

// maxRequests is the kubelet's (and net/http's) redirect budget: the
// original request and nine redirects; the tenth redirect fails the probe.
const maxRequests = 10

// errTooManyRedirects matches the kubelet's text.
var errTooManyRedirects = errors.New("stopped after 10 redirects")

// checkRedirect follows redirects to the original host on any port, and
// stops at a redirect to another host, returning that 3xx response (which
// the probe reports as a Warning).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	return checkRedirectCount(req, via)
}

// checkRedirectCount is the policy with non-local redirects followed.
func checkRedirectCount(_ *http.Request, via []*http.Request) error {
	if len(via) >= maxRequests {
		return errTooManyRedirects
	}
	return nil
}

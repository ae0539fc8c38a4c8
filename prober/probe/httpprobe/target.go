package httpprobe

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Target is one resolved HTTP probe: the engine has already picked the host
// (the probe's host field or the pod IP) and resolved a named port.
type Target struct {
	// Scheme is HTTP or HTTPS, matched without regard to case; empty means HTTP.
	Scheme corev1.URIScheme
	// Host is the address dialed; an IPv6 literal goes without brackets.
	Host string
	// Port is the resolved port number, 1-65535.
	Port int
	// Path is the request path, optionally with a query; empty means "/".
	Path string
	// Headers are the probe's httpHeaders, sent as given (see Prober.Probe).
	Headers []corev1.HTTPHeader
	// Timeout bounds the whole exchange, redirects and body included.
	Timeout time.Duration
}

// scheme returns the lower-case URL scheme, or an error for anything but
// http and https.
func (t Target) scheme() (string, error) {
	s := strings.ToLower(string(t.Scheme))
	switch s {
	case "":
		return "http", nil
	case "http", "https":
		return s, nil
	}
	return "", fmt.Errorf("http probe: scheme %q is not HTTP or HTTPS", t.Scheme)
}

// formatURL builds the probe URL as the kubelet does: the path is parsed so
// a query survives, and host:port is joined so IPv6 gets its brackets.
func formatURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		// The kubelet passes an unparsable path along as is; so do we.
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// header turns the probe's header list into request headers with the
// kubelet's defaults: User-Agent and Accept are added unless given, an
// empty Accept is dropped, and an empty User-Agent stays empty so that
// net/http sends none.
func header(list []corev1.HTTPHeader, userAgent string) http.Header {
	h := make(http.Header, len(list)+2)
	for _, e := range list {
		h.Add(e.Name, e.Value)
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", userAgent)
	}
	if _, ok := h["Accept"]; !ok {
		h.Set("Accept", "*/*")
	} else if h.Get("Accept") == "" {
		h.Del("Accept")
	}
	return h
}

// Package httpserve makes the HTTP servers probelet's processes listen
// with (metrics and health on every node, the admission webhook): any pod
// can reach their ports, so every phase of a request is bounded, not only
// its header, and a client that trickles a body or idles holds a
// connection (and its goroutine) for seconds, not for ever.
package httpserve

import (
	"net/http"
	"time"
)

// Limits bound one connection's phases.
type Limits struct {
	// ReadHeader is the time to read a request's header.
	ReadHeader time.Duration
	// Read is the time to read a whole request, body included.
	Read time.Duration
	// Write is the time from the end of the header to the end of the
	// response.
	Write time.Duration
	// Idle is how long a kept-alive connection waits for its next request.
	Idle time.Duration
	// MaxHeaderBytes bounds a request's header.
	MaxHeaderBytes int
}

// DefaultLimits fit a Prometheus scrape, a health check and an admission
// review from the API server (whose webhook timeout is at most 30 s, ours
// 2 s) with room to spare on a loaded node.
var DefaultLimits = Limits{
	ReadHeader:     5 * time.Second,
	Read:           10 * time.Second,
	Write:          30 * time.Second,
	Idle:           90 * time.Second,
	MaxHeaderBytes: 64 << 10,
}

// New returns a server for h with DefaultLimits.
func New(h http.Handler) *http.Server { return WithLimits(h, DefaultLimits) }

// WithLimits returns a server for h with l.
func WithLimits(h http.Handler, l Limits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeader,
		ReadTimeout:       l.Read,
		WriteTimeout:      l.Write,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

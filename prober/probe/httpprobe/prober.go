// Package httpprobe answers httpGet probes exactly as the kubelet does:
// one GET per probe on a fresh connection, the kubelet's headers, redirect
// policy, status ranges, body cap and output strings.
package httpprobe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
	"github.com/probelet/probelet/quietio"
	"github.com/probelet/probelet/quietio/deadline"
	"github.com/probelet/probelet/quietio/httpwire"
)

// UserAgent is the kubelet v1.37 probe User-Agent, sent unless the probe
// sets its own.
const UserAgent = "kube-probe/1.37"

// maxBodyLength caps how much of a response body is read and reported.
const maxBodyLength = 10 << 10

// MaxResponseHeaderBytes bounds a probe response's headers. The kubelet
// keeps net/http's default, 10 MiB, so a target answering megabytes of
// headers costs the node that much memory per probe in flight; a probe
// needs a status line. 1 MiB is what a Go server accepts of a request's
// headers (http.DefaultMaxHeaderBytes). More is a Failure with net/http's
// message, as the kubelet's answer to more than 10 MiB is.
const MaxResponseHeaderBytes = 1 << 20

// Prober runs HTTP probes. It is safe for concurrent use; its transport is
// built once and keeps no idle connections.
type Prober struct {
	tlsConfig      *tls.Config
	followNonLocal bool
	netHTTPOnly    bool
	// transport is the kubelet's; direct, in front of it, is the quiet
	// I/O's exchange on the probing goroutine for plain HTTP (nil with
	// WithNetHTTPTransport or --io=std).
	transport *http.Transport
	direct    *httpwire.Transport
	dialer    *tcpprobe.Dialer
}

// New returns a Prober configured like the kubelet's: TLS certificates are
// not verified, keep-alives are off (every request says Connection: close),
// no proxy is used, no Accept-Encoding is added, and sockets carry the
// probe dialer's SO_LINGER.
func New(opts ...Option) *Prober {
	// Probes never verify certificates, like the kubelet.
	p := &Prober{tlsConfig: &tls.Config{InsecureSkipVerify: true}}
	for _, opt := range opts {
		opt(p)
	}
	p.dialer = tcpprobe.NewDialer()
	p.transport = p.newTransport()
	if !p.netHTTPOnly && !quietio.Off() {
		p.direct = &httpwire.Transport{Dial: p.dialer.DialRaw, Next: p.transport, MaxHeaderBytes: MaxResponseHeaderBytes}
	}
	return p
}

// newTransport is the kubelet's probe transport: SetTransportDefaults
// adds what it has on top, HTTP/2 over TLS, handshake and idle timeouts.
func (p *Prober) newTransport() *http.Transport {
	return utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig:    p.tlsConfig,
		DisableKeepAlives:  true,
		Proxy:              http.ProxyURL(nil),
		DisableCompression: true,
		DialContext:        p.dialer.DialContext,
		// HTTP/2 (over TLS) takes its header list limit from this too.
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	})
}

// ownTransport is a probe's transport of its own, made at its first
// request (a plain-HTTP probe on the quiet I/O never makes one) and
// closed after the probe. A probe from a pod's network namespace uses
// one: the shared transport's HTTP/2 connections are pooled by host and
// port, which name different servers in different namespaces, and a
// connection dialled for one pod's probe must never answer another's.
type ownTransport struct {
	p  *Prober
	tr *http.Transport
}

func (o *ownTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if o.tr == nil {
		o.tr = o.p.newTransport()
	}
	return o.tr.RoundTrip(r)
}

func (o *ownTransport) close() {
	if o.tr != nil {
		o.tr.CloseIdleConnections()
	}
}

// Probe sends one GET to t and judges the answer like the kubelet:
// 200-299 is Success with the body as output; 300-399 (a redirect to
// another host, which is not followed) is Warning with output
// "Probe terminated redirects, Response body: <body>"; any other status is
// Failure "HTTP probe failed with statuscode: N"; a transport error or
// timeout is Failure with the client's error text. Bodies are read up to
// 10 KiB. An invalid target, a cancelled ctx, a body that cannot be read,
// or a socket the pod's network namespace (ctx's origin) could not give
// is an error, and the engine discards the result as the kubelet does.
func (p *Prober) Probe(ctx context.Context, t Target) (probe.Result, string, error) {
	caller := ctx
	client, ctx, deadline, cancel := p.client(ctx, t)
	defer cancel()
	req, err := p.newRequest(ctx, t)
	if err != nil {
		return probe.Unknown, "", err
	}
	res, err := client.Do(req)
	if err != nil {
		if caller.Err() != nil {
			return probe.Unknown, "", fmt.Errorf("http probe of %s: %w", req.URL, caller.Err())
		}
		if podnet.IsSocketError(err) {
			return probe.Unknown, "", fmt.Errorf("http probe of %s: %w", req.URL, err)
		}
		if !errors.Is(err, errTooManyRedirects) { // the redirect policy's own words
			err = httpwire.ClientTimeout(err, deadline)
		}
		return probe.Failure, err.Error(), nil
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBodyLength))
	if err != nil {
		return probe.Unknown, "", fmt.Errorf("http probe of %s: reading response body: %w", req.URL, httpwire.BodyTimeout(err, deadline))
	}
	result, output := judge(res.StatusCode, string(body))
	return result, output, nil
}

// judge maps a status code and the (capped) body to a result and output.
func judge(code int, body string) (probe.Result, string) {
	switch {
	case code >= http.StatusOK && code < http.StatusMultipleChoices:
		return probe.Success, body
	case code >= http.StatusMultipleChoices && code < http.StatusBadRequest:
		return probe.Warning, "Probe terminated redirects, Response body: " + body
	}
	// The body stays out of the failure text (kubernetes/kubernetes#99425).
	return probe.Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", code)
}

func (p *Prober) newRequest(ctx context.Context, t Target) (*http.Request, error) {
	if err := probe.CheckEndpoint("http", t.Host, t.Port, t.Timeout); err != nil {
		return nil, err
	}
	return request(ctx, t, UserAgent, "http probe")
}

// request is the kubelet's GET of t (NewRequestForHTTPGetAction) with
// userAgent unless t's headers set one; kind names what asks in errors.
func request(ctx context.Context, t Target, userAgent, kind string) (*http.Request, error) {
	scheme, err := t.scheme()
	if err != nil {
		return nil, err
	}
	u := formatURL(scheme, t.Host, t.Port, t.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: building request for path %q: %w", kind, t.Path, err)
	}
	req.Header = header(t.Headers, userAgent)
	// A Host header becomes the request's Host; net/http keeps it across
	// relative redirects.
	req.Host = req.Header.Get("Host")
	return req, nil
}

// client is per probe because the timeout is; the transport is shared.
// For plain HTTP it is the direct exchange's, with the timeout as a
// deadline on ctx (returned, with when it falls and its cancel): an
// http.Client with a Timeout and a transport it does not know starts a
// goroutine and a timer per request to enforce it, which is what the
// direct exchange is there to save (and the deadline is the process's
// timer file's, not a Go timer: package deadline); httpwire.ClientTimeout
// and BodyTimeout then word its errors as that Client would.
func (p *Prober) client(ctx context.Context, t Target) (*http.Client, context.Context, time.Time, context.CancelFunc) {
	var next http.RoundTripper = p.transport
	direct, done := p.direct, func() {}
	if podnet.FromContext(ctx) != nil {
		own := &ownTransport{p: p}
		next, done = own, own.close
		if direct != nil {
			direct = &httpwire.Transport{Dial: p.dialer.DialRaw, Next: own, MaxHeaderBytes: MaxResponseHeaderBytes}
		}
	}
	c := &http.Client{Transport: next, CheckRedirect: checkRedirect}
	if p.followNonLocal {
		c.CheckRedirect = checkRedirectCount
	}
	if s, err := t.scheme(); err != nil || s != "http" || direct == nil {
		c.Timeout = t.Timeout
		return c, ctx, time.Time{}, done
	}
	c.Transport = direct
	at := time.Now().Add(t.Timeout)
	ctx, cancel := deadline.WithDeadline(ctx, at)
	return c, ctx, at, func() { cancel(); done() }
}
